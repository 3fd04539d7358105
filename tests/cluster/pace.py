#!/usr/bin/env python3
"""tests/cluster/pace.py - the migration pace adapts (issue 13 item 1,
DESIGN.md 13, docs/design.md "Migration pace"): a real cluster of
brim-coord and brim-node processes on loopback, stopped by PID.

    pace.py --list
    pace.py --bin BUILD/bin CASE

backs_off_when_cpu_waits  every node and two busy loops share one CPU
                          (taskset) while node4 joins: the nodes' loop
                          threads wait for the CPU, so the pace halves its
                          slice (mig_pace_backoffs > 0 on the nodes that
                          streamed, the slice within 50 .. 1000 us), and
                          the join still completes, and reads of the
                          preload's keys by the new map find every one
"""
import os
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "support")]
import brimtest as bt  # noqa: E402
import migrate_basic as mb  # noqa: E402

CASES = bt.Cases()
case = CASES
NKEYS = 20000
VALUE = 1024


def pin(pid, cpu):
    subprocess.run(["taskset", "-a", "-p", "-c", str(cpu), str(pid)],
                   check=True, capture_output=True, timeout=10)


def hog(cpu, seconds):
    """A busy loop pinned to CPU for at most SECONDS."""
    return subprocess.Popen(
        ["taskset", "-c", str(cpu), sys.executable, "-c",
         "import time\nend = time.monotonic() + %f\n"
         "while time.monotonic() < end: pass\n" % seconds])


def bench(bindir, cport, *args):
    r = subprocess.run([os.path.join(bindir, "brim-bench"), "--coordinator",
                        "127.0.0.1:%d" % cport, "--keys", str(NKEYS),
                        "--key-size", "24", "--value-size", str(VALUE),
                        "--quiet"] + list(args),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (args, r.returncode, r.stderr[-2000:])
    return r.stdout


@case
def backs_off_when_cpu_waits(bindir):
    if shutil.which("taskset") is None:
        raise bt.Skip("no taskset (util-linux)")
    cl, t1 = mb.start3(bindir)
    hogs = []
    try:
        # The preload writes every key once (values of VALUE bytes).
        bench(bindir, cl.cport, "--ops", "1")
        for n in cl.nodes.values():
            pin(n.proc.pid, 0)
        hogs = [hog(0, 60), hog(0, 60)]
        time.sleep(0.3)
        cl.add("node4")
        pin(cl.nodes["node4"].proc.pid, 0)
        cl.wait_members(4)
        st = cl.wait_streams_done(timeout=120)
        for h in hogs:
            h.kill()
            h.wait()
        hogs = []
        moved = {n: s for n, s in st.items()
                 if s["mig_batches_out"] > 0 or s["mig_batches_in"] > 0}
        assert "node4" in moved and st["node4"]["mig_keys_in"] > 0, st
        backoffs = {n: s["mig_pace_backoffs"] for n, s in moved.items()}
        sys.stdout.write("pace: backoffs %r, slice us %r\n" % (
            backoffs, {n: s["mig_pace_slice_us"] for n, s in moved.items()}))
        assert sum(backoffs.values()) > 0, backoffs
        for n, s in st.items():
            assert 50 <= s["mig_pace_slice_us"] <= 1000, (n, s)
        # Reads of the preload's keys by the new map: none missing.
        out = bench(bindir, cl.cport, "--no-preload", "--get-ratio", "1",
                    "--ops", str(NKEYS), "--json")
        assert '"misses":0' in out and '"errors":0' in out, out[-600:]
    except BaseException:
        cl.dump()
        raise
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        cl.close()


if __name__ == "__main__":
    sys.exit(mb.main(CASES))
