#!/usr/bin/env python3
"""tests/cluster/webview.py - the coordinator's live web view in a real
headless Chromium (issue 16 item 4, acceptance 3): a real cluster of
brim-coord (with --http-listen) and brim-node processes on loopback,
Debian's chromium driven over the DevTools protocol (tests/support/cdp.py),
every process stopped by PID.

    webview.py --list
    webview.py --bin BUILD/bin [--screenshots DIR] CASE

join_seen   the page at / shows every member with its partitions and the
            cap line; node4, added by the test, appears, and the
            migration's progress moves while it streams (slowed by the test
            hook to a few seconds) and ends at every partition done; the
            page reports no console error, exception or failed load; a
            screenshot before, during and after the join (into
            --screenshots DIR when given: docs/img/webview-*.png is made so)
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "support")]
import brimtest as bt  # noqa: E402
import brimwire as bw  # noqa: E402
import migrate_basic as mb  # noqa: E402

CASES = bt.Cases()
case = CASES
NKEYS = 20000
SHOTS = {"dir": None}

ROWS = 'document.querySelectorAll("#nodes tbody tr").length'
MIG = 'document.getElementById("migration")'


def page_members(b):
    """[(name, partitions, cap)] as the page's table shows them."""
    return b.eval('Array.from(document.querySelectorAll("#nodes tbody tr"))'
                  '.map(tr => [tr.dataset.member, Number(tr.cells[2]'
                  '.textContent), Number(tr.cells[3].textContent)])')


@case
def join_seen(bindir):
    try:
        import cdp
    except ImportError as e:
        # python3-websocket belongs to /usr/bin/python3: run again there.
        if sys.executable != "/usr/bin/python3" \
                and os.path.exists("/usr/bin/python3"):
            os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
        raise bt.Skip("no python3-websocket (apt-get install "
                      "python3-websocket): %s" % e)
    if cdp.chromium_path() is None:
        raise bt.Skip("no chromium (Debian's chromium package)")
    hport = bw.free_port()
    # 40 ms per batch: the join's partitions stream for a few seconds.
    cl = mb.Cluster(bindir, delay_ms=40,
                    coord_args=["--http-listen", "127.0.0.1:%d" % hport])
    shots = SHOTS["dir"] or tempfile.mkdtemp(prefix="brim-webview-")
    os.makedirs(shots, exist_ok=True)
    b = None
    try:
        for i in (1, 2, 3):
            cl.add("node%d" % i)
        cl.wait_members(3)
        r = subprocess.run(
            [os.path.join(bindir, "brim-bench"), "--coordinator",
             "127.0.0.1:%d" % cl.cport, "--keys", str(NKEYS), "--key-size",
             "24", "--value-size", "512", "--ops", "1", "--quiet"],
            capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        b = cdp.Browser()
        b.navigate("http://127.0.0.1:%d/" % hport)
        b.wait_for(ROWS + " === 3", what="three members")
        rows = page_members(b)
        assert sorted(n for n, _, _ in rows) == ["node1", "node2", "node3"], rows
        assert all(p > 0 and c > 0 and p <= c for _, p, c in rows), rows
        assert b.eval('document.querySelector("#loads [data-cap]") !== null')
        assert b.eval('document.querySelectorAll("#ring [data-arc]").length') \
            > 0, "no arcs on the ring"
        b.screenshot(os.path.join(shots, "webview-before.png"))

        cl.add("node4")
        b.wait_for(ROWS + " === 4", timeout=20, what="node4")
        seen = set()
        deadline = time.monotonic() + 60
        shot_during = False
        while True:
            done = b.eval(MIG + ".dataset.done")
            total = b.eval(MIG + ".dataset.total")
            state = b.eval('document.getElementById("migration-state")'
                           '.textContent')
            if state == "streaming" and done is not None:
                seen.add(int(done))
                if not shot_during and len(seen) >= 2:
                    b.screenshot(os.path.join(shots, "webview-during.png"))
                    shot_during = True
            if state == "at rest" and done == total and len(seen) >= 2:
                break
            assert time.monotonic() < deadline, \
                "progress seen %r, now %s/%s %s" % (sorted(seen), done,
                                                    total, state)
            time.sleep(0.2)
        assert len(seen) >= 2, "the progress never moved: %r" % sorted(seen)
        b.pump(1.0)
        rows = page_members(b)
        assert len(rows) == 4 and all(p <= c for _, p, c in rows), rows
        b.screenshot(os.path.join(shots, "webview-after.png"))
        assert not b.errors, b.errors
        print("join_seen: progress %d values (%d .. %d), screenshots in %s"
              % (len(seen), min(seen), max(seen), shots))
    except BaseException:
        cl.dump()
        raise
    finally:
        if b is not None:
            b.close()
        cl.close()
        if SHOTS["dir"] is None:
            shutil.rmtree(shots, ignore_errors=True)


def run(fn, a):
    SHOTS["dir"] = a.screenshots
    return fn(a.bin)


if __name__ == "__main__":
    sys.exit(bt.main(CASES, options=[
        ("--bin", dict(help="the build's bin directory")),
        ("--screenshots", dict(help="keep the screenshots in DIR"))],
        need=["bin"], run=run))
