#!/usr/bin/env python3
"""tests/cluster/bench_redis_cluster.py - brim-bench --target redis-cluster
against a real Redis Cluster (label cluster).

Each case starts three redis-server processes in cluster mode (a temp dir,
no persistence, ports in 33000-33999, bus ports 10000 above), joins them
with `redis-cli --cluster create`, waits (bounded) for cluster_state:ok on
every node, and stops every process by PID at the end. Every wait and loop
is bounded in count and time. A missing redis-server or redis-cli skips
(exit 77) with a message.

  bench_redis_cluster.py --list
  bench_redis_cluster.py --bench BIN CASE

Cases:
  verify     --verify closed loop for a few seconds: lost=0 stale=0
             errors=0, ops > 0, no redirect on a stable cluster
  reshard    --verify --rate while a fourth master joins
             (`redis-cli --cluster add-node`) and takes slots
             (`rebalance --cluster-use-empty-masters`): lost=0 stale=0
             errors=0, moved > 0 (ask reported), the slot map refreshed
  ask        every key in one slot ({hash tag}) that is MIGRATING from
             its master and IMPORTING at another: each request the first
             master no longer holds the key for comes back ASK and goes
             to the other, ASKING first: lost=0 stale=0 errors=0, ask > 0,
             moved = 0
  del_node   every key in one slot; the bench is stopped (SIGSTOP) while
             its master gives all its slots away (`--cluster reshard`) and
             is removed (`--cluster del-node`, which resets it), so the
             bench's map still names it: the reset master answers
             CLUSTERDOWN, the bench reads the map again and goes to the
             new master: lost=0 stale=0 errors=0, tryagain > 0
  usage      a redis-server not in cluster mode: one line naming the
             problem, exit 1; --coordinator refused with redis-cluster
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import brimtest as bt  # noqa: E402
import ports  # noqa: E402

CASES = bt.Cases()


def fail(msg):
    raise AssertionError(msg)


def pick_ports(n):
    """N consecutive free ports with their cluster bus ports (+10000), all
    below the ephemeral range (ports.py)."""
    base = ports.free_base(n, also=(10000,))
    return list(range(base, base + n))


def tools():
    server = shutil.which("redis-server")
    cli = shutil.which("redis-cli")
    if server is None or cli is None:
        raise bt.Skip("no %s on this machine (deploy/packages.txt: "
                      "redis-server, redis-tools)" %
                      ("redis-server" if server is None else "redis-cli"))
    return server, cli


class Cluster:
    """Redis servers on loopback in one temp dir, stopped by PID."""

    def __init__(self, server, cli, cluster=True):
        self.server, self.cli = server, cli
        self.cluster = cluster
        self.dir = tempfile.mkdtemp(prefix="brim-rcluster-")
        self.procs = {}         # port -> Popen

    def start(self, port):
        cmd = [self.server, "--port", str(port), "--bind", "127.0.0.1",
               "--save", "", "--appendonly", "no", "--dir", self.dir,
               "--logfile", os.path.join(self.dir, "%d.log" % port)]
        if self.cluster:
            cmd += ["--cluster-enabled", "yes", "--cluster-config-file",
                    "nodes-%d.conf" % port, "--cluster-node-timeout", "5000"]
        self.procs[port] = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.procs[port].poll() is not None:
                fail("redis-server on %d exited at start (%s)" %
                     (port, self.log_tail(port)))
            if self.redis(port, "PING", check=False) == "PONG":
                return
            time.sleep(0.05)
        fail("redis-server on %d did not answer PING in 10 s" % port)

    def log_tail(self, port):
        try:
            with open(os.path.join(self.dir, "%d.log" % port)) as f:
                return " | ".join(f.read().splitlines()[-3:])
        except OSError:
            return "no log"

    def redis(self, port, *args, check=True, timeout=10):
        p = subprocess.run([self.cli, "-h", "127.0.0.1", "-p", str(port)]
                           + list(args), capture_output=True, text=True,
                           timeout=timeout)
        if check and p.returncode != 0:
            fail("redis-cli -p %d %s: %s" % (port, " ".join(args),
                                             p.stderr.strip()))
        return p.stdout.strip()

    def tool(self, *args, timeout=120):
        """redis-cli --cluster ARGS; its output, or a failure."""
        p = subprocess.run([self.cli, "--cluster"] + list(args),
                           capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            fail("redis-cli --cluster %s exited %d:\n%s%s" %
                 (" ".join(args), p.returncode, p.stdout[-2000:],
                  p.stderr[-1000:]))
        return p.stdout

    def wait_ok(self, ports, nodes, seconds=30):
        """Every node of PORTS says cluster_state:ok and knows NODES nodes,
        within SECONDS."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready = 0
            for port in ports:
                info = self.redis(port, "CLUSTER", "INFO", check=False)
                known = "cluster_known_nodes:%d" % nodes in info
                ready += "cluster_state:ok" in info and known
            if ready == len(ports):
                return
            time.sleep(0.1)
        fail("the cluster did not reach cluster_state:ok with %d nodes on "
             "all of %s in %d s" % (nodes, ports, seconds))

    def create(self, ports):
        for port in ports:
            self.start(port)
        self.tool("create", *["127.0.0.1:%d" % p for p in ports],
                  "--cluster-replicas", "0", "--cluster-yes")
        self.wait_ok(ports, len(ports))

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        for p in self.procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def cluster_of(masters, spare=0):
    """A cluster of MASTERS started and joined, and SPARE more servers in
    cluster mode left out of it: (Cluster, ports), stopped at the end."""
    server, cli = tools()
    c = Cluster(server, cli)
    try:
        ports = pick_ports(masters + spare)
        c.create(ports[:masters])
        for port in ports[masters:]:
            c.start(port)
        yield c, ports
    finally:
        c.stop()


def bench_cmd(args, port, *flags):
    return [args.bench, "--target", "redis-cluster", "--server",
            "127.0.0.1:%d" % port, "--quiet", "--json"] + list(flags)


def verdict(out, err, rc):
    """The JSON line of a run, after its own checks."""
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if not lines:
        fail("no JSON from brim-bench (exit %d):\n%s\n%s" % (rc, out, err))
    j = json.loads(lines[-1])
    print(out.strip())
    for k in ("lost", "stale", "errors"):
        if j[k] != 0:
            fail("%s=%d (exit %d); stderr:\n%s" % (k, j[k], rc, err[-3000:]))
    if j["ops"] <= 0:
        fail("no ops measured")
    if rc != 0 or not j["ok"]:
        fail("brim-bench exited %d, ok=%s:\n%s" % (rc, j["ok"], err[-3000:]))
    return j


def run_bench(args, port, *flags):
    """brim-bench FLAGS against the node on PORT to its end: its JSON."""
    p = subprocess.run(bench_cmd(args, port, "--verify", *flags),
                       capture_output=True, text=True, timeout=120)
    return verdict(p.stdout, p.stderr, p.returncode)


@CASES
def case_verify(args):
    with cluster_of(3) as (c, ports):
        j = run_bench(args, ports[1], "--duration", "3", "--keys", "5000",
                      "--threads", "2", "--pipeline", "4")
        if j["masters"] != 3 or j["moved"] != 0 or j["ask"] != 0:
            fail("a stable 3-master cluster: masters=%d moved=%d ask=%d" %
                 (j["masters"], j["moved"], j["ask"]))
        # The keys were spread by slot: every master holds some.
        sizes = [int(c.redis(port, "DBSIZE")) for port in ports]
        if min(sizes) == 0:
            fail("a master holds no key: %s" % sizes)


@CASES
def case_reshard(args):
    with cluster_of(3, spare=1) as (c, ports):
        reshard(args, c, ports)


def reshard(args, c, ports):
    """case_reshard's body: the bench runs while PORTS[3] joins."""
    bench = None
    try:
        # Long enough to span the join and the rebalance; the bench is
        # stopped (by PID) if it outlives them by far.
        bench = subprocess.Popen(
            bench_cmd(args, ports[0], "--verify", "--rate", "5000",
                      "--duration", "20", "--keys", "20000"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        c.tool("add-node", "127.0.0.1:%d" % ports[3],
               "127.0.0.1:%d" % ports[0])
        # The new master must know every node (gossip) before it can
        # import slots: rebalance fails with CLUSTERDOWN otherwise.
        c.wait_ok(ports, 4)
        c.tool("rebalance", "127.0.0.1:%d" % ports[0],
               "--cluster-use-empty-masters", timeout=120)
        mine = [ln.split() for ln in
                c.redis(ports[3], "CLUSTER", "NODES").splitlines()
                if "myself" in ln]
        ranges = mine[0][8:] if mine else []
        if not ranges:
            fail("the rebalance gave the fourth master no slot")
        try:
            out, err = bench.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            bench.kill()
            out, err = bench.communicate(timeout=10)
            fail("brim-bench did not end 90 s after the rebalance")
        j = verdict(out, err, bench.returncode)
        bench = None
        print("reshard: moved=%d ask=%d refresh=%d tryagain=%d masters=%d; "
              "the fourth master serves %s" %
              (j["moved"], j["ask"], j["refresh"], j["tryagain"],
               j["masters"], " ".join(ranges)))
        if j["masters"] != 4:
            fail("the bench ended with %d masters, not 4" % j["masters"])
        if j["moved"] <= 0:
            fail("no MOVED seen while slots moved to a new master")
        if j["refresh"] <= 0:
            fail("the slot map was never read again")
    finally:
        if bench is not None and bench.poll() is None:
            bench.kill()
            bench.wait(timeout=10)


def slot_master(c, port, slot):
    """(node id, port) of the master serving SLOT, from CLUSTER NODES."""
    for line in c.redis(port, "CLUSTER", "NODES").splitlines():
        f = line.split()
        if "master" not in f[2]:
            continue
        for r in f[8:]:
            lo, _, hi = r.partition("-")
            if lo.isdigit() and int(lo) <= slot <= int(hi or lo):
                return f[0], int(f[1].split("@")[0].rsplit(":", 1)[1])
    fail("no master serves slot %d" % slot)


@CASES
def case_ask(args):
    with cluster_of(3) as (c, ports):
        slot = int(c.redis(ports[0], "CLUSTER", "KEYSLOT", "{rc}"))
        src_id, src = slot_master(c, ports[0], slot)
        dst = [p for p in ports if p != src][0]
        dst_id = c.redis(dst, "CLUSTER", "MYID")
        c.redis(dst, "CLUSTER", "SETSLOT", str(slot), "IMPORTING", src_id)
        c.redis(src, "CLUSTER", "SETSLOT", str(slot), "MIGRATING", dst_id)
        j = run_bench(args, ports[0], "--duration", "2", "--keys", "2000",
                      "--key-prefix", "{rc}", "--connections", "6")
        print("ask: slot %d MIGRATING %d -> %d: ask=%d moved=%d" %
              (slot, src, dst, j["ask"], j["moved"]))
        if j["ask"] <= 0 or j["moved"] != 0:
            fail("a slot in migration: ask=%d moved=%d" %
                 (j["ask"], j["moved"]))
        if int(c.redis(src, "DBSIZE")) != 0:
            fail("keys written to the migrating master, not the importing")


@CASES
def case_del_node(args):
    with cluster_of(3) as (c, ports):
        slot = int(c.redis(ports[0], "CLUSTER", "KEYSLOT", "{rc}"))
        src_id, src = slot_master(c, ports[0], slot)
        rest = [p for p in ports if p != src]
        seed, dst = "127.0.0.1:%d" % rest[0], rest[1]
        dst_id = c.redis(dst, "CLUSTER", "MYID")
        nslots = 0
        # The bench's seed is not SRC: a reset master's CLUSTER SLOTS is
        # empty.
        bench = subprocess.Popen(
            bench_cmd(args, rest[0], "--verify", "--rate", "200",
                      "--duration", "120", "--keys", "200", "--key-prefix",
                      "{rc}", "--connections", "3", "--timeout", "30000"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(2)
            bench.send_signal(signal.SIGSTOP)
            try:
                for line in c.redis(src, "CLUSTER", "NODES").splitlines():
                    f = line.split()
                    if "myself" in f[2]:
                        nslots = sum(int(r.partition("-")[2] or r) -
                                     int(r.partition("-")[0]) + 1
                                     for r in f[8:] if r[0].isdigit())
                c.tool("reshard", seed, "--cluster-from", src_id,
                       "--cluster-to", dst_id, "--cluster-slots",
                       str(nslots), "--cluster-yes", timeout=240)
                c.tool("del-node", seed, src_id)
            finally:
                bench.send_signal(signal.SIGCONT)
            time.sleep(3)
            bench.send_signal(signal.SIGINT)
            out, err = bench.communicate(timeout=60)
        finally:
            if bench.poll() is None:
                bench.kill()
                bench.communicate(timeout=10)
        j = verdict(out, err, bench.returncode)
        print("del_node: %d slots of %d moved to %d, %d deleted: "
              "tryagain=%d moved=%d refresh=%d" %
              (nslots, src, dst, src, j["tryagain"], j["moved"],
               j["refresh"]))
        if j["tryagain"] <= 0:
            fail("the reset master never answered CLUSTERDOWN: the case "
                 "did not happen")


@CASES
def case_usage(args):
    server, cli = tools()
    c = Cluster(server, cli, cluster=False)
    try:
        port = pick_ports(1)[0]
        c.start(port)
        p = subprocess.run(bench_cmd(args, port, "--duration", "1"),
                           capture_output=True, text=True, timeout=60)
        lines = p.stderr.strip().splitlines()
        if p.returncode != 1 or len(lines) != 1 \
                or "not in cluster mode" not in lines[0] \
                or "cluster support disabled" not in lines[0]:
            fail("a redis-server not in cluster mode: exit %d, stderr %r" %
                 (p.returncode, p.stderr))
        print(lines[0])
    finally:
        c.stop()
    p = subprocess.run([args.bench, "--target", "redis-cluster",
                        "--coordinator", "127.0.0.1:1"],
                       capture_output=True, text=True, timeout=30)
    if p.returncode != 2 or "takes --server" not in p.stderr:
        fail("--coordinator with redis-cluster: exit %d, %r" %
             (p.returncode, p.stderr))


def main():
    return bt.main(CASES, options=[("--bench", {})], need=["bench"])


if __name__ == "__main__":
    sys.exit(main())
