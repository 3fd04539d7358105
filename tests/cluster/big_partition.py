#!/usr/bin/env python3
"""tests/cluster/big_partition.py - a join that streams one big partition
(issue 13 item 2): KEYS small keys and one value of the largest size, all
in the one partition the joiner takes, streamed under an open-loop
brim-bench --verify load; no node may be declared dead or lose its lease,
and every record must read back exact. A real cluster of brim-coord and
brim-node processes on loopback (P = 256), stopped by PID.

    big_partition.py --list
    big_partition.py --bin BUILD/bin CASE
    big_partition.py --bin BUILD/bin --report [--keys N] [--rate R]

join_big_partition  20,000 keys and a 1 MiB value in each of up to three
                    partitions that node4's join moves, under 2,000
                    ops/s: they arrive whole, no death, no lease expiry,
                    the bench lost=0 stale=0 errors=0

--report (deploy/bench/big-partition.sh) runs the same at 100,000 keys by
default and prints the figures: the stream's duration, every node's
latest heartbeat against the tenth of dead-after, and the bench's p50/p99
before and during the join. Timings are printed, never asserted.

Which partitions the join moves is found by a join of an empty node4
first; after its leave the data goes into three it took, and the second
join (checked) takes at least one of them again.
"""
import argparse
import json
import os
import re
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
P = 256
VALUE_MAX = 1048576            # brim-node's default --max-value-bytes
DEAD_AFTER_MS = 3000           # brim-coord's default --dead-after-ms


class Cluster(mb.Cluster):
    """migrate_basic's cluster at P = 256, nodes taking P from it."""

    def __init__(self, bindir):
        super().__init__(bindir, partitions=P)

    def add(self, name):
        port = bw.free_port()
        n = mb.Proc([os.path.join(self.bindir, "brim-node"), "--name", name,
                     "--coordinator", "127.0.0.1:%d" % self.cport,
                     "--listen", "127.0.0.1:%d" % port],
                    os.path.join(self.dir, name + ".log"), env=self.env)
        n.port = port
        self.nodes[name] = n
        mb.wait_port(port, n)

    def brimctl(self, *args, timeout=120):
        r = subprocess.run([os.path.join(self.bindir, "brimctl"),
                            "--coordinator", "127.0.0.1:%d" % self.cport]
                           + list(args), capture_output=True, text=True,
                           timeout=timeout)
        assert r.returncode == 0, (args, r.returncode, r.stdout[-2000:],
                                   r.stderr[-2000:])
        return r.stdout

    def owners(self, t):
        return [t["members"][o][0] if o < len(t["members"]) else None
                for o in t["owner"]]

    def wait_idle(self, timeout=120):
        """Every stream done at the nodes and at the coordinator."""
        self.wait_streams_done(timeout=timeout)
        deadline = time.monotonic() + timeout
        while json.loads(self.brimctl("stats", "--json"))[
                "migration"]["active"]:
            assert time.monotonic() < deadline, "migration still active"
            time.sleep(0.2)


def target_partitions(cl):
    """Join an empty node4, note partitions it takes, and leave it again.
    Returns (up to 3 of them, the map after the leave). The map is not a
    function of the membership alone (a change moves as little as it can
    from the map before), so the data goes into three of them: the same
    join from nearly the same map takes most of them again."""
    t1 = cl.wait_members(3)
    cl.add("node4")
    t2 = cl.wait_members(4)
    cl.wait_idle()
    after = cl.owners(t2)
    cl.brimctl("leave", "node4", "--wait", "--timeout", "60")
    cl.nodes["node4"].proc.wait(timeout=30)
    del cl.nodes["node4"]
    cl.conns.pop("node4", None)
    t3 = cl.wait_members(3)
    back = cl.owners(t3)
    gained = [p for p in range(P) if after[p] == "node4"
              and back[p] == cl.owners(t1)[p]]
    assert gained, "node4 took no partition"
    step = max(1, len(gained) // 3)
    return gained[::step][:3], t3


def records(path, seed, parts, keys):
    """Write, for each partition of PARTS, KEYS small records and one of
    VALUE_MAX bytes, as brimctl's jsonl. Returns the records written."""
    want = {p: keys + 1 for p in parts}
    n, i = 0, 0
    with open(path, "w") as f:
        while any(want.values()):
            k = b"bp:%d" % i
            i += 1
            p = bt.partition(k, seed, P)
            if want.get(p, 0) == 0:
                continue
            v = "x" * VALUE_MAX if want[p] == keys + 1 else "v%d" % i
            want[p] -= 1
            f.write(json.dumps({"key": k.decode(), "value": v}) + "\n")
            n += 1
    return n


def bench(cl, rate, secs, out):
    """brim-bench --verify on keys of its own, open loop, in the
    background; its JSON line ends OUT."""
    return subprocess.Popen(
        [os.path.join(cl.bindir, "brim-bench"), "--coordinator",
         "127.0.0.1:%d" % cl.cport, "--verify", "--key-prefix", "bench:",
         "--connections", "8", "--keys", "20000", "--value-size", "100-1000",
         "--rate", str(rate), "--duration", str(secs), "--quiet", "--json"],
        stdout=open(out, "w"), stderr=subprocess.STDOUT)


def bench_result(p, out):
    p.wait(timeout=300)
    lines = open(out).read().splitlines()
    assert lines, "brim-bench printed nothing (exit %r)" % p.returncode
    return json.loads(lines[-1])


def run(bindir, keys, rate, report):
    cl = Cluster(bindir)
    tmp = tempfile.mkdtemp(prefix="brim-bigpart-")
    try:
        for i in (1, 2, 3):
            cl.add("node%d" % i)
        parts, t1 = target_partitions(cl)
        srcs = {p: cl.owners(t1)[p] for p in parts}
        path = os.path.join(tmp, "records.jsonl")
        t0 = time.monotonic()
        n = records(path, t1["seed"], parts, keys)
        cl.brimctl("import", path, "--format", "jsonl")
        if report:
            print("partitions %s on %s: each %d keys and one value of %d "
                  "bytes (made and imported in %.1f s)"
                  % (parts, [srcs[p] for p in parts], keys, VALUE_MAX,
                     time.monotonic() - t0))

        # The most late a heartbeat has been so far, to tell the join's
        # own from what came before it (the import, a loaded machine).
        late0 = {name: cl.stats(name)["heartbeat_late_max_ms"]
                 for name in cl.nodes}
        # Before: the same load, no change.
        b1 = bench(cl, rate, 5, os.path.join(tmp, "before.json"))
        r1 = bench_result(b1, os.path.join(tmp, "before.json"))
        # During: node4 joins 1 s in; the load runs on past the stream.
        secs = 8
        b2 = bench(cl, rate, secs, os.path.join(tmp, "during.json"))
        time.sleep(1)
        t_join = time.monotonic()
        cl.add("node4")
        t2 = cl.wait_members(4, timeout=60)
        moved = [p for p in parts if cl.owners(t2)[p] == "node4"]
        assert moved, "the join moved none of %s" % parts
        cl.wait_streams_done(timeout=120)
        t_done = time.monotonic()
        r2 = bench_result(b2, os.path.join(tmp, "during.json"))
        cl.wait_idle()

        got = cl.brimctl("verify", path, "--format", "jsonl")
        assert ("verified %d/%d" % (n, n)) in got, got
        s4 = cl.stats("node4")
        assert s4["keys"] >= len(moved) * (keys + 1), (s4["keys"], moved)
        rows = {}
        for name in sorted(cl.nodes):
            s = cl.stats(name)
            rows[name] = (s["heartbeat_late_max_ms"], s["heartbeats_late"],
                          s["lease_expiries"])
        t = cl.wait_members(4)
        assert len(t["members"]) == 4, t["members"]
        # The coordinator's line for a death (server/coord/member.c).
        deaths = re.findall(r"member \S+: no heartbeat for \d+ ms: dead",
                            cl.coord.output())
        assert not deaths, deaths
        for name, (_, _, expiries) in rows.items():
            assert expiries == 0, (name, rows)
        for r in (r1, r2):
            assert r["lost"] == 0 and r["stale"] == 0 and r["errors"] == 0, r
        if report:
            print("the join moved %d of them to node4 (%s, from %s): "
                  "%.2f s from the join's start to the last stream's end"
                  % (len(moved), moved, [srcs[p] for p in moved],
                     t_done - t_join))
            print("heartbeats (a tenth of dead-after: %d ms); the most "
                  "one went out after it was due, before the bench runs "
                  "and at the end:" % (DEAD_AFTER_MS // 10))
            for name, (late, nlate, exp) in rows.items():
                print("  %s: %s ms -> %d ms; %d later than %d ms, lease "
                      "expiries %d" % (name, late0.get(name, "-"), late,
                                       nlate, DEAD_AFTER_MS // 10, exp))
            for what, r in (("before", r1), ("during", r2)):
                print("bench %-6s: %d ops at %d/s, p50 %.0f us, p99 %.0f "
                      "us, max %.0f us, lost=%d stale=%d errors=%d"
                      % (what, r["ops"], rate, r["p50_us"], r["p99_us"],
                         r.get("max_us", float("nan")), r["lost"],
                         r["stale"], r["errors"]))
        return 0
    except BaseException:
        cl.dump()
        raise
    finally:
        cl.close()
        subprocess.run(["rm", "-rf", tmp])


@case
def join_big_partition(bindir):
    return run(bindir, 20000, 2000, False)


def main():
    if "--report" in sys.argv:
        ap = argparse.ArgumentParser(description="the big-partition join's "
                                     "figures (deploy/bench/big-partition.sh)")
        ap.add_argument("--bin", required=True)
        ap.add_argument("--report", action="store_true")
        ap.add_argument("--keys", type=int, default=100000)
        ap.add_argument("--rate", type=int, default=10000)
        a = ap.parse_args()
        return run(a.bin, a.keys, a.rate, True)
    return mb.main(CASES)


if __name__ == "__main__":
    sys.exit(main())
