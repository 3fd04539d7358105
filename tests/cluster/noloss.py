#!/usr/bin/env python3
"""tests/cluster/noloss.py - regression tests of issue 10: a graceful join
never loses an acknowledged write, in the four ways it once did.

    noloss.py --list
    noloss.py --bin BUILD/bin [--launcher deploy/brim-cluster] CASE

issue_10_batch_limit   values near the 1 MiB limit stream while node4
                       joins: no batch above the receiver's frame limit,
                       nothing dropped, lost=0 stale=0 errors=0, and the
                       next join is not held back
issue_10_coord_restart brim-coord restarted while a join streams: the next
                       join waits for the running migration (it is told
                       from the nodes), nothing superseded, every record
                       verified
issue_10_no_wait_cap   a join whose migration lasts longer than the 60 s
                       that once capped the wait: the next join still
                       waits, every record verified
issue_11_alloc_failures allocations fail on the migration path (test
                       hook BRIM_TEST_ALLOC_FAIL): tombstones, inserted
                       entries, stream frames; each failure is retried or
                       refused RETRY, counted, and nothing is lost
join_during_pending    node3 joins while a change (node1's leave) is
                       pending (node2 SIGSTOPped, so it does not ack):
                       the coordinator tells node3 the committed map
                       before the change that adds it, node3 takes
                       node2's streams of what node1 handed over, and
                       every record is verified (once nemesis seed 5)
issue_10_link_reset    every TCP connection to the joiner reset once
                       (ss -K, root) mid-stream: the links are made
                       again, the streams restart, every record verified

Each case starts a cluster with deploy/brim-cluster on free loopback
ports in a fresh directory and stops it by PID at the end. Exit 0 pass,
1 fail, 77 skipped (issue_10_link_reset without root or ss -K, unless
BRIM_MULTIHOST_REQUIRED=1, which makes a skip a failure).
"""
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import brimtest as bt  # noqa: E402
import ports  # noqa: E402

CASES = bt.Cases()
case = CASES


def free_base(span):
    """A base port below the ephemeral range with SPAN free ports."""
    return ports.cluster_base(span)


class Cluster:
    """A deploy/brim-cluster cluster in a temporary directory."""

    def __init__(self, a, nodes, memory_mb, node_args="", env=None):
        self.a = a
        self.dir = tempfile.mkdtemp(prefix="brim-noloss-")
        self.base = free_base(nodes + 4)
        self.coord = "127.0.0.1:%d" % self.base
        self.env = dict(os.environ, BRIM_BIN=a.bin, BRIM_NODE_ARGS=node_args,
                        BRIM_CLUSTER_WAIT_S="240",
                        BRIM_SECRET_FILE=os.path.join(self.dir, "secret"))
        self.env.update(env or {})
        self.run([a.launcher, "up", "--nodes", str(nodes), "--dir", self.dir,
                  "--base-port", str(self.base), "--memory-mb",
                  str(memory_mb)])

    def run(self, cmd, timeout=300, check=True):
        p = subprocess.run(cmd, env=self.env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout)
        out = p.stdout.decode(errors="replace")
        if check and p.returncode != 0:
            raise AssertionError("%s exited %d:\n%s" % (" ".join(cmd),
                                                        p.returncode, out))
        return out

    def ctl(self, *args, server=None, timeout=120):
        target = ["--server", server] if server else ["--coordinator",
                                                      self.coord]
        return self.run([os.path.join(self.a.bin, "brimctl")] + target
                        + list(args), timeout=timeout)

    def node_stats(self, name):
        out = self.ctl("stats", "--json", server=self.addr(name))
        return json.loads(out)["nodes"][0]["stats"]

    def cluster_stats(self):
        return json.loads(self.ctl("stats", "--json"))

    def addr(self, name):
        addr = None
        with open(os.path.join(self.dir, "nodes")) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[0] == name:
                    addr = parts[1]
        assert addr is not None, "no node %s" % name
        return addr

    def add_node(self, name):
        return self.run([self.a.launcher, "add-node", name, "--dir",
                         self.dir], timeout=300)

    def log(self, name):
        with open(os.path.join(self.dir, name + ".log"),
                  errors="replace") as f:
            return f.read()

    def logs(self):
        return "".join(self.log(n) for n in self.names())

    def names(self):
        return [f[:-4] for f in os.listdir(self.dir)
                if f.endswith(".log") and f != "coord.log"]

    def down(self):
        self.run([self.a.launcher, "down", "--dir", self.dir], check=False)

    def dump(self):
        for name in ["coord"] + sorted(self.names()):
            try:
                text = self.log(name)
            except OSError:
                continue
            print("---- %s (last 30 lines) ----" % name)
            print("\n".join(text.splitlines()[-30:]))


@contextlib.contextmanager
def running(c):
    """Yield cluster C; on failure print its logs; always stop it."""
    try:
        yield c
    except BaseException:
        c.dump()
        raise
    finally:
        c.down()
        shutil.rmtree(c.dir, ignore_errors=True)


def make_records(path, n, size):
    """N JSON lines of SIZE-byte values, keyed k0..k(N-1)."""
    rng = random.Random(n * 131 + size)
    with open(path, "w") as f:
        for i in range(n):
            head = "%d:" % i
            body = "".join(rng.choice("abcdefghij") for _ in range(16))
            v = (head + body) * (size // (len(head) + 16) + 1)
            f.write('{"key":"k%d","value":"%s"}\n' % (i, v[:size]))


def load(c, path):
    """Store every record of the JSON-lines file PATH (brimctl import)."""
    c.ctl("import", path, "--format", "jsonl", timeout=600)


def verify(c, path, n):
    out = c.ctl("verify", path, "--format", "jsonl", timeout=600)
    assert "verified %d/%d" % (n, n) in out, out


def bench_result(out):
    line = [ln for ln in out.splitlines() if ln.startswith("{")][-1]
    return json.loads(line)


def wait_quiet(c, timeout):
    """Wait until the cluster reports no migration; return seconds."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if not c.cluster_stats()["migration"]["active"]:
            return time.monotonic() - t0
        time.sleep(0.5)
    raise AssertionError("migration still active after %d s" % timeout)


@case
def issue_10_batch_limit(a):
    with running(Cluster(a, 3, 512)) as c:
        bench = subprocess.Popen(
            [os.path.join(a.bin, "brim-bench"), "--coordinator", c.coord,
             "--verify", "--keys", "1200", "--value-size", "400000-1048576",
             "--get-ratio", "0.9", "--del-ratio", "0", "--ttl-ratio", "0",
             "--rate", "300", "--connections", "4", "--duration", "16",
             "--json", "--quiet"], env=c.env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT)
        time.sleep(6)
        c.add_node("node4")
        out = bench.communicate(timeout=120)[0].decode(errors="replace")
        r = bench_result(out)
        print("brim-bench: lost=%d stale=%d errors=%d" %
              (r["lost"], r["stale"], r["errors"]))
        assert bench.returncode == 0, out
        assert r["lost"] == 0 and r["stale"] == 0 and r["errors"] == 0, out
        s4 = c.node_stats("node4")
        assert s4["bad_frames"] == 0, s4
        for n in ("node1", "node2", "node3"):
            s = c.node_stats(n)
            assert s["mig_partitions_out_dropped"] == 0, (n, s)
        wait_quiet(c, 60)
        assert c.node_stats("node4")["mig_partitions_in_flight"] == 0
        t0 = time.monotonic()
        c.add_node("node5")
        took = time.monotonic() - t0
        print("next join took %.1f s" % took)
        assert took < 20, took


def restart_coord(c):
    with open(os.path.join(c.dir, "coord.pid")) as f:
        pid = int(f.read())
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        cmd = [x.decode() for x in f.read().split(b"\0") if x]
    os.kill(pid, 9)
    for _ in range(100):
        try:
            os.kill(pid, 0)
            time.sleep(0.02)
        except OSError:
            break
    log = open(os.path.join(c.dir, "coord.log"), "ab")
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL)
    with open(os.path.join(c.dir, "coord.pid"), "w") as f:
        f.write("%d\n" % p.pid)


@case
def issue_10_coord_restart(a):
    n = 24000
    with running(Cluster(a, 1, 256, "--migrate-mb-per-s 1")) as c:
        data = os.path.join(c.dir, "data.jsonl")
        make_records(data, n, 1000)
        load(c, data)
        c.add_node("node2")             # ~12 MB at 1 MB/s: about 12 s
        time.sleep(2)
        restart_coord(c)
        time.sleep(0.5)
        in_flight = c.node_stats("node2")["mig_partitions_in_flight"]
        print("node2 partitions in flight after the restart: %d" % in_flight)
        assert in_flight > 0, "the migration ended too soon to test"
        t0 = time.monotonic()
        c.add_node("node3")
        took = time.monotonic() - t0
        print("the second join committed %.1f s after it was asked" % took)
        assert "change waits: " in c.log("coord"), "the join did not wait"
        assert "superseded" not in c.logs()
        verify(c, data, n)


@case
def issue_10_no_wait_cap(a):
    # 140,000 x 1000 bytes on one node; about half (70 MB) streams to
    # node2 at 1 MB/s: a migration of over 60 s, the cap that once ended
    # the wait of the next change.
    n = 140000
    with running(Cluster(a, 1, 384, "--migrate-mb-per-s 1")) as c:
        data = os.path.join(c.dir, "data.jsonl")
        make_records(data, n, 1000)
        load(c, data)
        t0 = time.monotonic()
        c.add_node("node2")
        time.sleep(1)
        c.add_node("node3")
        took = time.monotonic() - t0
        print("the second join committed %.1f s after the first" % took)
        assert took > 62, "the migration was shorter than the old cap"
        assert "superseded" not in c.logs()
        verify(c, data, n)


@case
def join_during_pending(a):
    n = 8000
    with running(Cluster(a, 2, 256)) as c:
        data = os.path.join(c.dir, "data.jsonl")
        make_records(data, n, 1000)
        load(c, data)
        with open(os.path.join(c.dir, "node2.pid")) as f:
            pid2 = int(f.read().split()[0])
        os.kill(pid2, signal.SIGSTOP)
        try:
            # node1's leave is proposed to node1 and node2; node2 cannot
            # acknowledge, so the change stays pending.
            c.ctl("leave", "node1")
            deadline = time.monotonic() + 20
            while "epoch 2 proposed" not in c.log("coord"):
                assert time.monotonic() < deadline, "no proposal"
                time.sleep(0.05)
            join = subprocess.Popen(
                [a.launcher, "add-node", "node3", "--dir", c.dir],
                env=c.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            while "member node3" not in c.log("coord"):
                assert time.monotonic() < deadline, "node3 did not join"
                time.sleep(0.05)
            assert "epoch 2 committed" not in c.log("coord")
        finally:
            os.kill(pid2, signal.SIGCONT)
        out, _ = join.communicate(timeout=240)
        assert join.returncode == 0, out.decode(errors="replace")
        # Between epoch 2's commit and node3's change being proposed the
        # cluster is briefly quiet (CI caught a check made then): wait
        # for node3 to own partitions in the committed map first.
        deadline = time.monotonic() + 120
        while not any(n["name"] == "node3" and n["partitions"] > 0
                      for n in c.cluster_stats()["nodes"]):
            assert time.monotonic() < deadline, "node3 never owned a partition"
            time.sleep(0.2)
        wait_quiet(c, 120)
        coord = c.log("coord")
        assert "member node3: told epoch 2" in coord, \
            "node3 was not told the committed map"
        assert "not completed" not in c.logs()
        for name in ("node2", "node3"):
            st = c.node_stats(name)
            assert st["mig_partitions_out_dropped"] == 0, (name, st)
        verify(c, data, n)


@case
def issue_11_alloc_failures(a):
    n = 20000
    fail = {"BRIM_TEST_ALLOC_FAIL": "tomb:3,spare:2,insert:50,send:20"}
    with running(Cluster(a, 3, 256, "--migrate-mb-per-s 2", env=fail)) as c:
        data = os.path.join(c.dir, "data.jsonl")
        make_records(data, n, 1000)
        load(c, data)
        bench = subprocess.Popen(
            [os.path.join(a.bin, "brim-bench"), "--coordinator", c.coord,
             "--verify", "--keys", "5000", "--key-prefix", "b:",
             "--value-size", "100-4000", "--get-ratio", "0.5", "--rate",
             "2000", "--connections", "4", "--duration", "14", "--json",
             "--quiet"], env=c.env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT)
        time.sleep(3)
        c.add_node("node4")
        out = bench.communicate(timeout=120)[0].decode(errors="replace")
        r = bench_result(out)
        print("brim-bench: lost=%d stale=%d errors=%d" %
              (r["lost"], r["stale"], r["errors"]))
        assert bench.returncode == 0, out
        assert r["lost"] == 0 and r["stale"] == 0 and r["errors"] == 0, out
        wait_quiet(c, 120)
        total = {}
        for x in ("node1", "node2", "node3", "node4"):
            s = c.node_stats(x)
            for k in ("mig_insert_failures", "mig_stream_errors",
                      "mig_streams_restarted", "mig_tombstone_refusals",
                      "mig_partitions_out_dropped", "mig_writes_in_flight",
                      "mig_deletes_in_flight"):
                total[k] = total.get(k, 0) + s[k]
        print("counted: %r" % total)
        assert total["mig_partitions_out_dropped"] == 0, total
        assert total["mig_insert_failures"] > 0, "no insert failed"
        assert total["mig_streams_restarted"] > 0, "no stream began again"
        assert total["mig_tombstone_refusals"] > 0, "no write was refused"
        verify(c, data, n)


@case
def issue_10_link_reset(a):
    if os.geteuid() != 0:
        raise bt.Skip("ss -K needs root")
    if shutil.which("ss") is None:
        raise bt.Skip("no ss (iproute2)")
    n = 60000                           # 15 MB to node4 at 3 x 1 MB/s
    with running(Cluster(a, 3, 256, "--migrate-mb-per-s 1")) as c:
        data = os.path.join(c.dir, "data.jsonl")
        make_records(data, n, 1000)
        load(c, data)
        c.add_node("node4")
        time.sleep(1.5)
        port = c.addr("node4").rsplit(":", 1)[1]
        before = c.node_stats("node4")["mig_partitions_in_flight"]
        subprocess.run(["ss", "-K", "-tn", "state", "established",
                        "( dport = :%s )" % port, "dst", "127.0.0.1"],
                       stdout=subprocess.DEVNULL, check=True)
        print("reset every link to node4 with %d partitions in flight" %
              before)
        assert before > 0, "the migration ended too soon to test"
        took = wait_quiet(c, 120)
        print("migration complete %.1f s after the reset" % took)
        for name in ("node1", "node2", "node3"):
            s = c.node_stats(name)
            assert s["mig_partitions_out_dropped"] == 0, (name, s)
        lost = restarted = 0
        for x in ("node1", "node2", "node3"):
            s = c.node_stats(x)
            lost += s["mig_links_lost"]
            restarted += s["mig_streams_restarted"]
        # A stream with a batch in flight begins again; one between
        # batches goes on over the new link.
        print("links lost and made again: %d, streams restarted: %d" %
              (lost, restarted))
        assert lost >= 3, "a sender did not see the reset"
        verify(c, data, n)
    return 0


def main():
    # A skip (issue_10_link_reset without root) fails when
    # BRIM_MULTIHOST_REQUIRED=1 (CI).
    return bt.main(CASES, description=__doc__.split("\n")[0], options=[
        ("--bin", dict(default=os.path.join(ROOT, "build", "bin"))),
        ("--launcher", dict(default=os.path.join(ROOT, "deploy",
                                                 "brim-cluster")))],
        required_env="BRIM_MULTIHOST_REQUIRED")


if __name__ == "__main__":
    sys.exit(main())
