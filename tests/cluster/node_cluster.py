#!/usr/bin/env python3
"""node_cluster.py - brim-node in cluster mode (CTest node.cluster_<case>).

A fake coordinator written here stands in for brim-coord: it listens for
the node's connection and answers HELLO, JOIN and HEARTBEAT, and it
connects to the node as role coord to send EPOCH_PROPOSE, EPOCH_COMMIT and
EPOCH_ABORT with topologies built by `topo()` (PROTOCOL.md section 9). The
maps need valid owner indices only, not the placement rule. Keys are put in
partitions with brimtest.partition() (XXH3-64, as common/hash.c).
Every process is stopped by PID and every wait is bounded.

Usage: node_cluster.py --node PATH/TO/brim-node CASE
       node_cluster.py --list
"""

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "support")]
import brimtest as bt                                    # noqa: E402
import brimwire as bw                                    # noqa: E402
from brimwire import ST                                  # noqa: E402
from node_wire import check                              # noqa: E402

OPC = bw.OP                             # proto/ops.h's, through brimtest
ROLE_NODE, ROLE_COORD = bt.ROLE["NODE"], bt.ROLE["COORD"]
CID = 0x5eed0000c1c1c1c1                # the fake cluster's id
SEED = 0x1234abcd                       # its hash seed
P = 256                                 # partitions (the node's --partitions)
NAME = "n1"                             # the node under test
OTHER = ("n2", "127.0.0.1:9")           # a member that is never contacted
MEMBER_UP = 2

CASES = bt.Cases()
case = CASES


def partition(key):
    return bt.partition(key, SEED, P)


def keys_by_parity(n=40):
    """N keys in even partitions and N in odd ones."""
    even, odd = [], []
    i = 0
    while (len(even) < n or len(odd) < n) and i < 100000:
        k = b"key-%d" % i
        (even if partition(k) % 2 == 0 else odd).append(k)
        i += 1
    return even[:n], odd[:n]


def topo(epoch, members, owner_of, cluster_id=CID):
    """A topology: MEMBERS [(name, addr, incarnation)], OWNER_OF(p) -> name
    or None. Members are sorted by name, as the format requires."""
    members = sorted(members)
    index = {m[0]: i for i, m in enumerate(members)}
    owner = bytearray()
    for p in range(P):
        name = owner_of(p)
        owner += (index[name] if name is not None else 0xffff).to_bytes(
            2, "little")
    return [1, cluster_id, SEED, epoch, P, 16, 50000,
            [[n, a, 1000000, MEMBER_UP, inc] for n, a, inc in members],
            bytes(owner)]


def req(op, rid, epoch, *args):
    return bw.frame(bw.pack([OPC[op], rid, epoch] + list(args)))


class FakeCoord:
    """The coordinator's listener, served from a thread: records what the
    node sends and answers HELLO, JOIN, HEARTBEAT and MAP_FETCH."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.addr = "127.0.0.1:%d" % self.port
        self.lock = threading.Lock()
        self.got = []                   # decoded requests, in order
        self.join_topo = topo(0, [], lambda p: None)
        self.deny_heartbeats = False
        self.drop_after_join = 0        # close the connection after N JOINs
        self.stopping = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        deadline = time.monotonic() + 100
        while not self.stopping and time.monotonic() < deadline:
            try:
                s, _ = self.sock.accept()
            except socket.timeout:
                continue
            c = bw.Conn.__new__(bw.Conn)
            c.sock, c.timeout, c.buf = s, 0.2, bytearray()
            self.serve_conn(c, deadline)

    def serve_conn(self, c, deadline):
        while not self.stopping and time.monotonic() < deadline:
            try:
                r = c.reply(0.2)
            except socket.timeout:
                continue
            except (bw.Closed, OSError):
                return
            with self.lock:
                self.got.append(r)
            c.send(bw.frame(bw.pack(self.answer(r))))
            if r[0] == OPC["JOIN"] and self.drop_after_join > 0:
                self.drop_after_join -= 1
                c.close()               # the coordinator "goes away"
                return

    def answer(self, r):
        op, rid = r[0], r[1]
        if op == OPC["HELLO"]:
            return [0, rid, 1, CID, ROLE_COORD, 77, 0, "coord", 250,
                    1 << 20, (1 << 20) + (64 << 10), 1024]
        if op in (OPC["JOIN"], OPC["MAP_FETCH"]):
            return [0, rid, self.join_topo]
        if op == OPC["HEARTBEAT"]:
            if self.deny_heartbeats:
                return [ST["DENIED"], rid, "fenced: an old incarnation"]
            return [0, rid, self.join_topo[3], 1500]
        return [ST["UNKNOWNOP"], rid, "fake coordinator"]

    def requests(self, op):
        with self.lock:
            return [r for r in self.got if r[0] == OPC[op]]

    def wait_for(self, op, n=1, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.requests(op)
            if len(got) >= n:
                return got
            time.sleep(0.02)
        raise AssertionError("fake coordinator: %d %s within %.0f s (got "
                             "%r)" % (n, op, timeout, self.got))

    def close(self):
        self.stopping = True
        self.thread.join(5)
        self.sock.close()


class ClusterNode(bw.Node):
    """brim-node --name n1 --coordinator FAKE on a free port (by PID)."""

    def __init__(self, binary, coord, *args, start_timeout=15.0):
        self.binary = binary
        self.sanitized = bw.is_sanitized(binary)
        self.port = bw.free_port()
        self.addr = "127.0.0.1:%d" % self.port
        self.log = tempfile.NamedTemporaryFile(prefix="brim-node-",
                                               suffix=".log", delete=False)
        env = dict(os.environ)
        if self.sanitized:
            env["ASAN_OPTIONS"] = ("quarantine_size_mb=16:detect_leaks=1:"
                                   + env.get("ASAN_OPTIONS", ""))
        self.cmd = [binary, "--name", NAME, "--coordinator", coord.addr,
                    "--listen", self.addr, "--partitions", str(P)] + \
            [str(a) for a in args]
        self.proc = subprocess.Popen(self.cmd, stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)
        self.pid = self.proc.pid
        self.exit_code = None
        deadline = time.monotonic() + start_timeout
        while True:
            check(self.proc.poll() is None, "brim-node exited at start:\n%s",
                  self.output())
            try:
                socket.create_connection(("127.0.0.1", self.port),
                                         timeout=1.0).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError("brim-node did not accept")
                time.sleep(0.05)


class Peer:
    """A connection to the node with a role, sending stamped requests."""

    def __init__(self, node, role, cluster_id=0):
        self.c = bw.Conn(node.port, do_hello=False)
        self.rid = 1
        self.c.send(req("HELLO", 1, 0, 1, cluster_id, role, 0))
        rep = self.c.reply()
        check(rep[0] == 0, "HELLO as role %d refused: %r", role, rep)

    def call(self, op, epoch, *args):
        self.rid += 1
        self.c.send(req(op, self.rid, epoch, *args))
        rep = self.c.reply()
        check(rep[1] == self.rid or rep[1] == 0, "reply id %r for %d: %r",
              rep[1], self.rid, rep)
        return rep

    def close(self):
        self.c.close()


def expect(rep, status, what):
    check(rep[0] == ST[status], "%s: want %s, got %s: %r", what, status,
          bw.ST_NAME.get(rep[0], rep[0]), rep)


def start(args, *node_args):
    """The fake coordinator, a node joined to it, and a coord connection."""
    coord = FakeCoord()
    try:
        node = ClusterNode(args.node, coord, *node_args)
    except Exception:
        coord.close()
        raise
    try:
        join = coord.wait_for("JOIN")[0]
        inc = join[6]
        return coord, node, inc, Peer(node, ROLE_COORD, CID)
    except Exception:
        finish(coord, node)
        raise


def install(cp, epoch, members, owner_of):
    """PROPOSE and COMMIT one epoch through the coord connection CP."""
    expect(cp.call("EPOCH_PROPOSE", epoch - 1, topo(epoch, members,
                                                    owner_of)),
           "OK", "EPOCH_PROPOSE %d" % epoch)
    expect(cp.call("EPOCH_COMMIT", epoch - 1, epoch), "OK",
           "EPOCH_COMMIT %d" % epoch)


def two(node, inc):
    return [(NAME, node.addr, inc), (OTHER[0], OTHER[1], 0)]


def all_mine(p):
    return NAME


def even_mine(p):
    return NAME if p % 2 == 0 else OTHER[0]


def finish(coord, node, want_exit=0):
    try:
        node.stop()
        out = node.output()
        for mark in bw.SANITIZER_MARKS:
            check(mark not in out, "sanitizer report:\n%s", out[-8000:])
        check(node.exit_code == want_exit, "brim-node exit %r, want %r:\n%s",
              node.exit_code, want_exit, out[-4000:])
    finally:
        coord.close()
        node.cleanup()


# ---- cases ----

@case
def join_heartbeat(args):
    coord, node, inc, cp = start(args, "--weight", "2.5")
    try:
        hello = coord.wait_for("HELLO")[0]
        check(hello[5] == ROLE_NODE and hello[7] == NAME,
              "node's HELLO: %r", hello)
        join = coord.wait_for("JOIN")[0]
        check(join[3:] == [NAME, node.addr, 2500000, hello[6]],
              "JOIN args [name, addr, weight_ppm, incarnation]: %r", join)
        hbs = coord.wait_for("HEARTBEAT", 2, timeout=10)
        hb = hbs[-1]
        check(hb[3] == NAME and hb[4] == inc, "HEARTBEAT name/inc: %r", hb)
        for k in ("keys", "bytes", "partitions", "requests_per_sec"):
            check(k in hb[5], "HEARTBEAT stats lack %s: %r", k, hb[5])
        # No committed map yet: data ops get RETRY, never served.
        c = Peer(node, bw.ROLE_CLIENT)
        expect(c.call("GET", 0, b"k"), "RETRY", "GET before any map")
        # After a commit the heartbeat reports the partitions owned.
        install(cp, 1, two(node, inc), even_mine)
        n = len(coord.requests("HEARTBEAT"))
        hb = coord.wait_for("HEARTBEAT", n + 2)[-1]
        check(hb[5]["partitions"] == P // 2, "partitions in stats: %r", hb)
    finally:
        finish(coord, node)


@case
def moved_after_commit(args):
    coord, node, inc, cp = start(args)
    try:
        install(cp, 1, two(node, inc), even_mine)
        even, odd = keys_by_parity()
        c = Peer(node, bw.ROLE_CLIENT)
        for k in even:
            expect(c.call("SET", 1, k, b"v" + k, 0, 0), "OK", "SET own key")
            rep = c.call("GET", 1, k)
            expect(rep, "OK", "GET own key")
            check(rep[2] == b"v" + k, "GET value %r", rep)
        for k in odd:
            rep = c.call("SET", 1, k, b"v", 0, 0)
            expect(rep, "MOVED", "SET of another's key")
            check(rep[3:5] == [1, OTHER[1]], "MOVED [epoch, owner]: %r", rep)
        rep = c.call("MGET", 1, [even[0], odd[0], even[1]])
        expect(rep, "OK", "MGET")
        e = rep[2]
        check(e[0][0] == b"v" + even[0] and e[1] == ST["MOVED"]
              and e[2][0] == b"v" + even[1], "MGET entries %r", e)
    finally:
        finish(coord, node)


@case
def retry_pending(args):
    coord, node, inc, cp = start(args)
    try:
        install(cp, 1, two(node, inc), all_mine)
        even, odd = keys_by_parity(10)
        c = Peer(node, bw.ROLE_CLIENT)
        for k in even + odd:
            expect(c.call("SET", 1, k, b"v", 0, 0), "OK", "SET at epoch 1")
        expect(cp.call("EPOCH_PROPOSE", 1, topo(2, two(node, inc),
                                                even_mine)),
               "OK", "PROPOSE 2")
        for k in odd:
            rep = c.call("GET", 1, k)
            expect(rep, "RETRY", "GET of a partition being handed over")
            check(rep[3] == 1, "RETRY carries the node's epoch: %r", rep)
        for k in even:
            expect(c.call("GET", 1, k), "OK", "GET of a partition kept")
        rep = c.call("MGET", 1, [odd[0], even[0]])
        check(rep[2][0] == ST["RETRY"] and rep[2][1][0] == b"v",
              "MGET entries while pending: %r", rep)
        # An epoch newer than any the node knows: RETRY, even if owned.
        expect(c.call("GET", 5, even[0]), "RETRY", "GET stamped epoch 5")
        # Aborted: the node serves them again.
        expect(cp.call("EPOCH_ABORT", 1, 2), "OK", "ABORT 2")
        expect(c.call("GET", 1, odd[0]), "OK", "GET after the abort")
        expect(cp.call("EPOCH_COMMIT", 1, 2), "NOTFOUND", "COMMIT aborted")
    finally:
        finish(coord, node)


@case
def pending_epoch_commits(args):
    coord, node, inc, cp = start(args)
    try:
        install(cp, 1, two(node, inc), all_mine)
        expect(cp.call("EPOCH_PROPOSE", 1, topo(2, two(node, inc),
                                                even_mine)),
               "OK", "PROPOSE 2")
        even, odd = keys_by_parity(5)
        c = Peer(node, bw.ROLE_CLIENT)
        rep = c.call("GET", 2, odd[0])
        expect(rep, "MOVED", "GET stamped with the pending epoch")
        check(rep[3:5] == [2, OTHER[1]], "MOVED after the commit: %r", rep)
        expect(c.call("SET", 1, even[0], b"x", 0, 0), "OK", "SET kept key")
        # The coordinator's own commit arrives later: still OK.
        expect(cp.call("EPOCH_COMMIT", 1, 2), "OK", "late COMMIT 2")
    finally:
        finish(coord, node)


@case
def commit_drops(args):
    coord, node, inc, cp = start(args)
    try:
        install(cp, 1, two(node, inc), all_mine)
        even, odd = keys_by_parity(20)
        c = Peer(node, bw.ROLE_CLIENT)
        for k in even + odd:
            expect(c.call("SET", 1, k, b"v" + k, 0, 0), "OK", "SET epoch 1")
        install(cp, 2, two(node, inc), even_mine)
        install(cp, 3, two(node, inc), all_mine)
        # The odd partitions come back in flight from OTHER, a live member
        # that cannot be reached: a miss there is RETRY, never NOTFOUND.
        for k in odd[:3]:
            expect(c.call("GET", 3, k), "RETRY", "GET of a key in flight")
        # OTHER gone from the map: they complete at once, and empty.
        install(cp, 4, [(NAME, node.addr, inc)], all_mine)
        for k in odd:
            expect(c.call("GET", 4, k), "NOTFOUND", "GET of a dropped key")
        for k in even:
            rep = c.call("GET", 4, k)
            expect(rep, "OK", "GET of a kept key")
            check(rep[2] == b"v" + k, "kept value %r", rep)
    finally:
        finish(coord, node)


@case
def epoch_denied(args):
    coord, node, inc, cp = start(args)
    try:
        for role in (bw.ROLE_CLIENT, bw.ROLE_ADMIN, ROLE_NODE):
            c = Peer(node, role)
            t = topo(1, two(node, inc), all_mine)
            expect(c.call("EPOCH_PROPOSE", 0, t), "DENIED", "PROPOSE")
            expect(c.call("EPOCH_COMMIT", 0, 1), "DENIED", "COMMIT")
            expect(c.call("EPOCH_ABORT", 0, 1), "DENIED", "ABORT")
            c.close()
        # Nothing was kept: the coordinator's commit of 1 finds nothing.
        expect(cp.call("EPOCH_COMMIT", 0, 1), "NOTFOUND", "COMMIT 1")
    finally:
        finish(coord, node)


@case
def bad_topology(args):
    coord, node, inc, cp = start(args)
    try:
        install(cp, 1, two(node, inc), even_mine)
        good = topo(2, two(node, inc), all_mine)
        bad = []
        t = list(good)
        t[8] = t[8][:-2]                        # owner map too short
        bad.append(("short owner map", t, "BADREQ"))
        t = list(good)
        t[7] = list(reversed(t[7]))             # members out of order
        bad.append(("unsorted members", t, "BADREQ"))
        t = list(good)
        t[0] = 2                                # unknown format
        bad.append(("format 2", t, "BADREQ"))
        t = list(good)
        t[8] = b"\x07\x00" * P                  # owner index out of range
        bad.append(("owner out of range", t, "BADREQ"))
        bad.append(("other cluster", topo(2, two(node, inc), all_mine,
                                          cluster_id=CID + 1), "DENIED"))
        bad.append(("not newer", topo(1, two(node, inc), all_mine),
                    "EXISTS"))
        for what, t, want in bad:
            expect(cp.call("EPOCH_PROPOSE", 1, t), want, what)
            expect(cp.call("EPOCH_COMMIT", 1, 2), "NOTFOUND",
                   "COMMIT after " + what)
        even, odd = keys_by_parity(5)
        c = Peer(node, bw.ROLE_CLIENT)
        expect(c.call("SET", 1, even[0], b"v", 0, 0), "OK", "old map kept")
        rep = c.call("SET", 1, odd[0], b"v", 0, 0)
        expect(rep, "MOVED", "old map kept")
        check(rep[3] == 1, "epoch still 1: %r", rep)
        # The connection is still usable: a good proposal goes through.
        install(cp, 2, two(node, inc), all_mine)
        expect(c.call("SET", 2, odd[0], b"v", 0, 0), "OK", "map 2")
    finally:
        finish(coord, node)


@case
def older_epoch_served(args):
    """I08 at node level: an older stamp for a partition still owned is
    served; for one owned elsewhere now it gets MOVED at the new epoch."""
    coord, node, inc, cp = start(args)
    try:
        install(cp, 1, two(node, inc), all_mine)
        install(cp, 2, two(node, inc), even_mine)
        even, odd = keys_by_parity(5)
        c = Peer(node, bw.ROLE_CLIENT)
        for k in even:
            expect(c.call("SET", 1, k, b"old-stamp", 0, 0), "OK",
                   "SET stamped 1 on an owned partition")
            expect(c.call("GET", 0, k), "OK", "GET stamped 0")
        rep = c.call("GET", 1, odd[0])
        expect(rep, "MOVED", "GET stamped 1 on a lost partition")
        check(rep[3] == 2, "MOVED carries epoch 2: %r", rep)
    finally:
        finish(coord, node)


@case
def fenced(args):
    coord, node, inc, cp = start(args)
    try:
        coord.wait_for("HEARTBEAT")
        coord.deny_heartbeats = True
        node.proc.wait(10)
        check("fenced" in node.output(), "no fencing line in the log")
    finally:
        finish(coord, node, want_exit=1)


@case
def reconnect(args):
    """The coordinator drops the connection: the node reconnects with
    backoff and joins again under the same incarnation."""
    coord = FakeCoord()
    coord.drop_after_join = 2
    node = ClusterNode(args.node, coord)
    try:
        joins = coord.wait_for("JOIN", 3, timeout=15)
        check(all(j[3:] == joins[0][3:] for j in joins),
              "JOINs differ: %r", joins)
        coord.wait_for("HEARTBEAT", 1)
        check(node.alive(), "node died")
    finally:
        finish(coord, node)


@case
def options(args):
    def run(argv):
        p = subprocess.run([args.node] + argv, capture_output=True,
                           text=True, timeout=10)
        return p.returncode, p.stderr
    port = "127.0.0.1:%d" % bw.free_port()
    rc, err = run(["--standalone", "--coordinator", port, "--name", "a"])
    check(rc == 2 and "exclude" in err, "both modes: %d %r", rc, err)
    rc, err = run(["--coordinator", port])
    check(rc == 2 and "--name" in err, "no --name: %d %r", rc, err)
    rc, err = run(["--coordinator", port, "--name", "bad name"])
    check(rc == 2 and "--name" in err, "bad name: %d %r", rc, err)
    for w in ("0", "-1", "abc", "1001", "0.0001"):
        rc, err = run(["--coordinator", port, "--name", "a", "--weight", w])
        check(rc == 2 and "weight" in err, "--weight %s: %d %r", w, rc, err)
    rc, err = run(["--standalone", "--weight", "2"])
    check(rc == 2 and "weight" in err, "--weight standalone: %d %r", rc, err)


def main():
    return bt.main(CASES, description=__doc__.split("\n")[0],
                   options=[("--node", dict(help="the brim-node binary"))],
                   need=["node"])


if __name__ == "__main__":
    sys.exit(main())
