#!/usr/bin/env python3
"""tests/cluster/migrate_basic.py - partition migration between real
processes (DESIGN.md 7 steps 3-4, PROTOCOL.md section 11): a brim-coord and
three brim-nodes on free loopback ports, keys loaded at their owners, a
fourth node joins, and the partitions it gains are streamed to it.

    migrate_basic.py --list
    migrate_basic.py --bin BUILD/bin CASE

Each case is its own CTest test (tests/node.cmake). Every process is
stopped by PID; every wait is bounded.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "support")]
import brimtest as bt  # noqa: E402
import brimwire as bw  # noqa: E402

P = 1024
MAP_FETCH = bt.OP["MAP_FETCH"]
ROLE_ADMIN = bt.ROLE["ADMIN"]
NKEYS = 5000
CASES = bt.Cases()
case = CASES


class Proc:
    def __init__(self, cmd, log, env=None):
        self.log = log
        self.cmd = cmd
        with open(log, "wb") as f:
            self.proc = subprocess.Popen(cmd, stdout=f,
                                         stderr=subprocess.STDOUT, env=env)
        self.pid = self.proc.pid

    def output(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


def wait_port(port, proc, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        if proc.proc.poll() is not None:
            raise AssertionError("%s exited:\n%s" % (proc.cmd[0],
                                                     proc.output()))
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "%s did not start" % proc.cmd
            time.sleep(0.05)


class Cluster:
    def __init__(self, bindir, delay_ms=0, partitions=P, coord_args=()):
        self.bindir = bindir
        self.partitions = partitions
        self.dir = tempfile.mkdtemp(prefix="brim-migrate-")
        self.env = dict(os.environ)
        if delay_ms:
            self.env["BRIM_TEST_STREAM_DELAY_MS"] = str(delay_ms)
        self.cport = bw.free_port()
        self.coord = Proc([os.path.join(bindir, "brim-coord"), "--listen",
                           "127.0.0.1:%d" % self.cport, "--data-dir",
                           self.dir, "--partitions", str(partitions)]
                          + list(coord_args),
                          os.path.join(self.dir, "coord.log"))
        wait_port(self.cport, self.coord)
        self.nodes = {}
        self.conns = {}

    def add(self, name):
        port = bw.free_port()
        n = Proc([os.path.join(self.bindir, "brim-node"), "--name", name,
                  "--coordinator", "127.0.0.1:%d" % self.cport, "--listen",
                  "127.0.0.1:%d" % port, "--partitions", str(P),
                  # Per-partition lines ("sent partition") are at debug.
                  "--log-level", "debug"],
                 os.path.join(self.dir, name + ".log"), env=self.env)
        n.port = port
        self.nodes[name] = n
        wait_port(port, n)

    def conn(self, name):
        if name not in self.conns:
            self.conns[name] = bw.Conn(self.nodes[name].port, timeout=10)
        return self.conns[name]

    def fetch(self):
        c = bw.Conn(self.cport)
        try:
            rep = c.call(MAP_FETCH, 7)
        finally:
            c.close()
        assert rep[0] == 0, rep
        t = rep[2]
        members = [(m[0].decode() if isinstance(m[0], bytes) else m[0],
                    m[1].decode() if isinstance(m[1], bytes) else m[1])
                   for m in t[7]]
        ob = bytes(t[8])
        owner = [ob[2 * i] | (ob[2 * i + 1] << 8) for i in range(t[4])]
        return {"seed": t[2], "epoch": t[3], "members": members,
                "owner": owner}

    def wait_members(self, n, timeout=20.0):
        deadline = time.monotonic() + timeout
        while True:
            t = self.fetch()
            if t["epoch"] > 0 and len(t["members"]) == n:
                return t
            assert time.monotonic() < deadline, \
                "no epoch with %d members: %r" % (n, t["members"])
            time.sleep(0.1)

    def stats(self, name):
        return bw.stats(self.conn(name))

    def wait_streams_done(self, timeout=90.0):
        deadline = time.monotonic() + timeout
        while True:
            st = {n: self.stats(n) for n in self.nodes}
            if all(s["mig_partitions_out_pending"] == 0
                   and s["mig_partitions_in_flight"] == 0
                   for s in st.values()):
                return st
            assert time.monotonic() < deadline, "streams did not finish: %r" \
                % {n: (s["mig_partitions_out_pending"],
                       s["mig_partitions_in_flight"]) for n, s in st.items()}
            time.sleep(0.2)

    def close(self):
        for c in self.conns.values():
            c.close()
        for n in self.nodes.values():
            n.stop()
        self.coord.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def dump(self):
        for name, n in list(self.nodes.items()) + [("coord", self.coord)]:
            out = "rc=%r\n" % n.proc.poll() + n.output()
            sys.stderr.write("---- %s (last 40 lines) ----\n%s\n" %
                             (name, "\n".join(out.splitlines()[-40:])))


def part(t, key):
    return bt.partition(key, t["seed"], len(t["owner"]))


def owner_name(t, key):
    return t["members"][t["owner"][part(t, key)]][0]


def value_of(i):
    return b"v%d-" % i + b"x" * (i % 300)


def call_ok(c, op, rid, *args):
    rep = c.call(op, rid, *args)
    assert rep[0] == 0, (op, args[:1], rep)
    return rep


def load(cl, t, n=NKEYS, ttl_of=lambda k: 0):
    keys = [b"key-%d" % i for i in range(n)]
    rid = 100
    for i, k in enumerate(keys):
        rid += 1
        call_ok(cl.conn(owner_name(t, k)), "SET", rid, k, value_of(i),
                ttl_of(k), i & 0xffff)
    return keys


def wait_served(cl, name, key, timeout=20.0):
    """Wait until NAME serves KEY (it committed the epoch that gives it)."""
    deadline = time.monotonic() + timeout
    while True:
        rep = cl.conn(name).call("GET", 5, key)
        if rep[0] in (0, bw.ST["NOTFOUND"]):
            return
        assert time.monotonic() < deadline, "%s never served %r: %r" % (
            name, key, rep)
        time.sleep(0.05)


def sent_partitions(cl, epoch):
    got = set()
    pat = re.compile(r"migrate: sent partition (\d+) of epoch (\d+) to")
    for n in cl.nodes.values():
        for m in pat.finditer(n.output()):
            if int(m.group(2)) == epoch:
                got.add(int(m.group(1)))
    return got


def start3(bindir, delay_ms=0):
    cl = Cluster(bindir, delay_ms)
    for i in (1, 2, 3):
        cl.add("node%d" % i)
    t1 = cl.wait_members(3)
    return cl, t1


@case
def join_exact(bindir):
    """I09 spirit: every key readable at its new owner, counts exact, and
    the partitions streamed are exactly the map diff."""
    cl, t1 = start3(bindir)
    try:
        keys = load(cl, t1)
        # The counters of earlier epochs (node3 may have joined in an epoch
        # of its own, whose empty partitions also streamed) are left out:
        # the figures below are this join's, counted from here.
        st0 = cl.wait_streams_done()
        cl.add("node4")
        t2 = cl.wait_members(4)
        wait_served(cl, "node4", next(k for k in keys
                                      if owner_name(t2, k) == "node4"))
        st = cl.wait_streams_done()
        for n, s in st.items():
            for name in list(s):
                if name.startswith("mig_") and name in st0.get(n, {}) \
                        and not name.endswith(("_in_flight", "_pending")):
                    s[name] -= st0[n][name]
        for i, k in enumerate(keys):
            rep = cl.conn(owner_name(t2, k)).call("GET", 1000 + i, k)
            assert rep[0] == 0 and rep[2] == value_of(i), (k, rep)
            assert rep[3] == i & 0xffff, (k, rep)
        total = sum(s["keys"] for s in st.values())
        assert total == NKEYS, {n: s["keys"] for n, s in st.items()}
        # The map diff between the two epochs, as partitions.
        n1 = [m[0] for m in t1["members"]]
        n2 = [m[0] for m in t2["members"]]
        diff = {p for p in range(P)
                if n1[t1["owner"][p]] != n2[t2["owner"][p]]}
        assert diff, "the join moved nothing"
        sent = sent_partitions(cl, t2["epoch"])
        assert sent == diff, "streamed %d, diff %d: only streamed %r, only " \
            "diff %r" % (len(sent), len(diff), sorted(sent - diff)[:10],
                         sorted(diff - sent)[:10])
        s4 = st["node4"]
        moved = sum(1 for k in keys if owner_name(t2, k) == "node4")
        assert s4["mig_keys_in"] == moved == s4["keys"], (s4, moved)
        to4 = {p for p in diff if n2[t2["owner"][p]] == "node4"}
        assert s4["mig_partitions_in_done"] == len(to4), (s4, len(to4))
        assert sum(s["mig_partitions_in_done"] for s in st.values()) \
            == len(diff)
        assert sum(s["mig_keys_out"] for s in st.values()) \
            == sum(s["mig_keys_in"] for s in st.values())
        assert sum(s["mig_partitions_out_done"] for s in st.values()) \
            == len(diff)
        assert s4["mig_bytes_in"] > 0
        print("join_exact: %d partitions streamed (= map diff), %d keys "
              "moved, %d keys in all" % (len(diff), moved, total))
    except BaseException:
        cl.dump()
        raise
    finally:
        cl.close()


@case
def writes_win_in_window(bindir):
    """With BRIM_TEST_STREAM_DELAY_MS: a SET and a DEL at the new owner
    during the stream win, TTLs survive, in-flight counters count."""
    cl, t1 = start3(bindir, delay_ms=150)
    try:
        keys = load(cl, t1, n=3000)
        cl.add("node4")
        t2 = cl.wait_members(4)
        to4 = [k for k in keys if owner_name(t2, k) == "node4"]
        # Keys of the partitions streamed last: highest partition numbers.
        to4.sort(key=lambda k: -part(t2, k))
        kset, kdel, kread = to4[0], to4[1], to4[2]
        wait_served(cl, "node4", kread)
        c4 = cl.conn("node4")
        call_ok(c4, "SET", 11, kset, b"new-value", 0, 77)
        # Not streamed yet: the DEL pulls the key from the old owner first
        # (so it is found), the GET is answered by the old owner.
        rep = c4.call("DEL", 12, kdel)
        assert rep[0] == 0, ("DEL of a key not yet streamed", rep)
        rep = c4.call("GET", 13, kread)
        i = keys.index(kread)
        assert rep[0] == 0 and rep[2] == value_of(i), ("forwarded GET", rep)
        s4 = cl.stats("node4")
        assert s4["mig_partitions_in_flight"] > 0, s4
        assert s4["mig_writes_in_flight"] > 0, s4
        assert s4["mig_deletes_in_flight"] > 0, s4
        assert s4["mig_reads_in_flight"] > 0, s4
        assert s4["mig_stream_delay_ms"] == 150, s4
        # The GET missed here and went to the old owner; the DEL pulled.
        assert s4["mig_forwards"] > 0 and s4["mig_pulls"] > 0, s4
        assert s4["mig_forward_fails"] == 0 and s4["mig_pull_fails"] == 0, s4
        st = cl.wait_streams_done()
        rep = c4.call("GET", 14, kset)
        assert rep[0] == 0 and rep[2] == b"new-value" and rep[3] == 77, rep
        rep = c4.call("GET", 15, kdel)
        assert rep[0] == bw.ST["NOTFOUND"], ("deleted key came back", rep)
        assert st["node4"]["mig_entries_skipped"] >= 2, st["node4"]
        total = sum(s["keys"] for s in st.values())
        assert total == len(keys) - 1, total
        # The coordinator counts the stored keys and the skipped entries
        # apart (keys_moved once added both, so arc + cap fell short).
        stored = sum(s["mig_keys_in"] for s in st.values())
        skipped = sum(s["mig_entries_skipped"] for s in st.values())
        deadline = time.monotonic() + 5
        while True:
            c = bw.Conn(cl.cport)
            try:
                rep = c.call(bt.OP["CLUSTER_STATS"], 16)
            finally:
                c.close()
            assert rep[0] == 0, rep
            mig = {(k.decode() if isinstance(k, bytes) else k): v
                   for k, v in rep[2][b"migration" if b"migration" in rep[2]
                                      else "migration"].items()}
            if (mig["keys_moved"], mig["keys_skipped"]) == (stored, skipped) \
                    or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert (mig["keys_moved"], mig["keys_skipped"]) == \
            (stored, skipped), (mig, stored, skipped)
        assert mig["keys_moved_arc"] + mig["keys_moved_cap"] == stored, mig
        print("writes_win_in_window: SET and DEL during the stream won; "
              "in-flight counters %r" % {k: v for k, v in s4.items()
                                         if k.endswith("in_flight")})
    except BaseException:
        cl.dump()
        raise
    finally:
        cl.close()


@case
def forward_counts_once(bindir):
    """Issue 11: a forwarded GET and a pulled DEL are counted once each in
    STATS (requests and ops), exactly as a request served here is: the
    old owner's answer continues the decoded request, it is not
    dispatched again."""
    cl, t1 = start3(bindir, delay_ms=300)
    try:
        keys = load(cl, t1, n=3000)
        cl.add("node4")
        t2 = cl.wait_members(4)
        to4 = [k for k in keys if owner_name(t2, k) == "node4"]
        to4.sort(key=lambda k: -part(t2, k))    # streamed last
        wait_served(cl, "node4", to4[-1])
        c4 = cl.conn("node4")

        def counts():
            s = cl.stats("node4")
            ops = s.get("ops", {})
            return (s["requests"], ops.get("GET", 0), ops.get("DEL", 0),
                    ops.get("STATS", 0), s["mig_forwards"], s["mig_pulls"])

        r0, get0, del0, st0, fw0, pl0 = counts()
        gets, dels = to4[0:20], to4[20:30]
        for i, k in enumerate(gets):
            rep = c4.call("GET", 100 + i, k)
            assert rep[0] == 0 and rep[2] == value_of(keys.index(k)), rep
        for i, k in enumerate(dels):
            rep = c4.call("DEL", 200 + i, k)
            assert rep[0] == 0, ("DEL of a key not streamed yet", rep)
        r1, get1, del1, st1, fw1, pl1 = counts()
        assert fw1 - fw0 > 0 and pl1 - pl0 > 0, \
            "nothing was forwarded or pulled: the test proves nothing"
        assert get1 - get0 == len(gets), (get0, get1)
        assert del1 - del0 == len(dels), (del0, del1)
        # Every request in between, the first STATS included, once.
        assert r1 - r0 == len(gets) + len(dels) + (st1 - st0), \
            (r0, r1, st0, st1)
        print("forward_counts_once: %d GETs (%d forwarded), %d DELs (%d "
              "pulled): GET +%d, DEL +%d, requests +%d" %
              (len(gets), fw1 - fw0, len(dels), pl1 - pl0, get1 - get0,
               del1 - del0, r1 - r0))
    except BaseException:
        cl.dump()
        raise
    finally:
        cl.close()


@case
def ttl_survives(bindir):
    """Keys with TTL 100 are still there after migration; keys with TTL 6
    at load are gone at the new owner 7.5 s after the join, so the
    remaining TTL travelled with them."""
    cl, t1 = start3(bindir, delay_ms=20)
    try:
        keys = [b"ttl-%d" % i for i in range(2000)]
        for i, k in enumerate(keys):
            call_ok(cl.conn(owner_name(t1, k)), "SET", 100 + i, k,
                    value_of(i), 100 if i % 2 == 0 else 6, 0)
        cl.add("node4")
        t2 = cl.wait_members(4)
        moved = [k for k in keys if owner_name(t2, k) == "node4"]
        assert len(moved) > 50, len(moved)
        start = time.monotonic()
        cl.wait_streams_done()
        assert cl.stats("node4")["mig_keys_in"] > 0
        long_ = [k for k in moved if int(k.split(b"-")[1]) % 2 == 0]
        short = [k for k in moved if int(k.split(b"-")[1]) % 2 == 1]
        c4 = cl.conn("node4")
        for i, k in enumerate(long_):
            rep = c4.call("GET", 5000 + i, k)
            assert rep[0] == 0, (k, rep)
        # The short keys (TTL 6 at load) must expire at node4 as well.
        time.sleep(max(0.0, 7.5 - (time.monotonic() - start)))
        for i, k in enumerate(short):
            rep = c4.call("GET", 9000 + i, k)
            assert rep[0] == bw.ST["NOTFOUND"], ("TTL lost in migration",
                                                k, rep)
        for i, k in enumerate(long_[:50]):
            rep = c4.call("GET", 12000 + i, k)
            assert rep[0] == 0, (k, rep)
        print("ttl_survives: %d long-TTL keys kept, %d short-TTL keys "
              "expired at the new owner" % (len(long_), len(short)))
    except BaseException:
        cl.dump()
        raise
    finally:
        cl.close()


def main(cases=CASES, required_env=None):
    """The command line of this script and of those built on it
    (fault_kill.py, hostile.py, auth.py, multihost.py), each with its own
    CASES: --list, or --bin DIR CASE."""
    return bt.main(cases, options=[("--bin", dict(
        help="the build's bin directory"))], need=["bin"],
        run=lambda fn, a: fn(a.bin), required_env=required_env)


if __name__ == "__main__":
    sys.exit(main())
