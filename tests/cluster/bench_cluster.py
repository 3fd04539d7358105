#!/usr/bin/env python3
"""tests/cluster/bench_cluster.py - brim-bench --coordinator against a real
local cluster (deploy/brim-cluster: one brim-coord, brim-nodes on loopback).

    bench_cluster.py --list
    bench_cluster.py --bench BIN --cluster SCRIPT --bin BUILD/bin CASE

Cases (each its own CTest test, tests/bench.cmake):
  static      three nodes, no change: every request goes straight to its
              owner (moved == 0, retry == 0), lost=0 stale=0 errors=0
  membership  three nodes; --verify with 8 connections for ~12 s on 20,000
              keys; node4 joins at ~3 s, node1 leaves at ~8 s. Asserts
              errors == 0 and stale == 0, that the bench followed the map
              (epoch moved, MOVED or RETRY seen, maps fetched again), and
              prints lost.

Every process is stopped by PID (brim-cluster down, in a finally block);
every wait is bounded.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import brimtest as bt  # noqa: E402
import ports  # noqa: E402

CASES = bt.Cases()
case = CASES


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def free_base(n=8):
    """A base port with N free ports after it (bound and released)."""
    try:
        return ports.cluster_base(n)
    except AssertionError as e:
        fail(str(e))


class Cluster:
    def __init__(self, args, nodes):
        self.args = args
        self.dir = tempfile.mkdtemp(prefix="bench_cluster.")
        self.base = free_base()
        # A leave streams the leaver's partitions first: under load that
        # can take longer than brim-cluster's default 20 s bound.
        self.env = dict(os.environ, BRIM_BIN=args.bin,
                        BRIM_CLUSTER_LEAVE_S="90")
        self.nodes = nodes

    def run(self, *cmd, timeout=120):
        full = [self.args.cluster] + list(cmd) + ["--dir", self.dir]
        print("$ " + " ".join(full), flush=True)
        p = subprocess.run(full, env=self.env, capture_output=True,
                           text=True, timeout=timeout)
        sys.stdout.write(p.stdout + p.stderr)
        if p.returncode != 0:
            fail("%s exited %d" % (" ".join(cmd), p.returncode))

    def up(self):
        self.run("up", "--nodes", str(self.nodes), "--base-port",
                 str(self.base))

    def coord(self):
        return "127.0.0.1:%d" % self.base

    def down(self):
        try:
            subprocess.run([self.args.cluster, "down", "--dir", self.dir],
                           env=self.env, capture_output=True, timeout=60)
        finally:
            if os.environ.get("BRIM_KEEP_DIR") is None:
                shutil.rmtree(self.dir, ignore_errors=True)
            else:
                print("kept " + self.dir)


def bench(args, cl, duration, extra=()):
    cmd = [args.bench, "--target", "brim", "--coordinator", cl.coord(),
           "--verify", "--connections", "8", "--keys", "20000",
           "--duration", str(duration), "--json", "--quiet"] + list(extra)
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def result(p, timeout):
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        fail("brim-bench did not finish in %d s" % timeout)
    sys.stdout.write(out)
    sys.stdout.write(err[-4000:])
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if not lines:
        fail("no JSON from brim-bench (exit %d)" % p.returncode)
    return json.loads(lines[-1]), p.returncode


@case
def static(args):
    cl = Cluster(args, 3)
    try:
        cl.up()
        r, rc = result(bench(args, cl, 3), 60)
        if r["errors"] != 0 or r["lost"] != 0 or r["stale"] != 0:
            fail("lost=%d stale=%d errors=%d" % (r["lost"], r["stale"],
                                                 r["errors"]))
        if r["moved"] != 0 or r["retry"] != 0:
            fail("a still cluster redirected: moved=%d retry=%d"
                 % (r["moved"], r["retry"]))
        if r["nodes"] != 3 or r["ops"] == 0 or rc != 0:
            fail("nodes=%d ops=%d exit %d" % (r["nodes"], r["ops"], rc))
    finally:
        cl.down()


@case
def membership(args):
    cl = Cluster(args, 3)
    try:
        cl.up()
        t0 = time.monotonic()
        p = bench(args, cl, 12, ("--threads", "2"))
        time.sleep(max(0, t0 + 3 - time.monotonic()))
        cl.run("add-node", "node4")
        print("node4 joined at %.1f s" % (time.monotonic() - t0))
        time.sleep(max(0, t0 + 8 - time.monotonic()))
        cl.run("remove-node", "node1")
        print("node1 left at %.1f s" % (time.monotonic() - t0))
        r, rc = result(p, 120)
        print("lost=%d stale=%d errors=%d moved=%d retry=%d refetch=%d "
              "resent=%d epochs %d -> %d ops/s %.0f"
              % (r["lost"], r["stale"], r["errors"], r["moved"], r["retry"],
                 r["refetch"], r["resent"], r["epoch_first"],
                 r["epoch_last"], r["ops_per_sec"]))
        if r["errors"] != 0:
            fail("errors=%d" % r["errors"])
        # A graceful join or leave loses no acknowledged write: a miss of
        # a key not streamed yet is answered by its old owner.
        if r["stale"] != 0 or r["lost"] != 0:
            fail("stale=%d lost=%d" % (r["stale"], r["lost"]))
        if r["epoch_last"] < r["epoch_first"] + 2:
            fail("the bench did not follow both changes: epoch %d -> %d"
                 % (r["epoch_first"], r["epoch_last"]))
        if r["moved"] + r["retry"] == 0 or r["refetch"] == 0:
            fail("no redirect seen: moved=%d retry=%d refetch=%d"
                 % (r["moved"], r["retry"], r["refetch"]))
        if r["nodes"] != 3 or r["nodes_seen"] != 4:
            fail("nodes=%d nodes_seen=%d" % (r["nodes"], r["nodes_seen"]))
    finally:
        cl.down()


def tools_present(args):
    for what in ("bench", "cluster"):
        if not getattr(args, what) or not os.path.exists(getattr(args, what)):
            raise bt.Skip("no %s" % what)


def main():
    return bt.main(CASES, options=[("--bench", {}), ("--cluster", {}),
                                   ("--bin", {})], before=tools_present)


if __name__ == "__main__":
    sys.exit(main())
