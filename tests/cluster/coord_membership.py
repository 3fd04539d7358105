#!/usr/bin/env python3
"""tests/cluster/coord_membership.py - brim-coord against fake nodes
written in Python (PROTOCOL.md section 10). Each fake node listens for the
coordinator's connection (answers HELLO, EPOCH_PROPOSE/COMMIT/ABORT) and
connects to the coordinator to JOIN and HEARTBEAT.

    coord_membership.py --list
    coord_membership.py --coord PATH CASE
"""
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "support")]
import brimtest as bt  # noqa: E402
import brimwire as bw  # noqa: E402

ROLE_NODE, ROLE_COORD, ROLE_ADMIN = (bt.ROLE[r] for r in
                                     ("NODE", "COORD", "ADMIN"))
OPS = bt.OP                     # proto/ops.h's table
EEXISTS, EDENIED = None, None


def topo_decode(t):
    members = [m[0] if isinstance(m[0], str) else m[0].decode()
               for m in t[7]]
    owner = struct.unpack("<%dH" % t[4], t[8])
    return {"epoch": t[3], "P": t[4], "members": members, "owner": owner}


class FakeNode:
    """Listens for the coordinator; ACK decides whether it acknowledges."""

    def __init__(self, name, coord_port, ack=True):
        self.name, self.ack, self.coord_port = name, ack, coord_port
        self.inc = int.from_bytes(os.urandom(6), "little") + 1
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(4)
        self.lsock.settimeout(0.2)
        self.port = self.lsock.getsockname()[1]
        self.seen = []              # (op name, epoch) received
        self.stop = False
        self.beat = True
        self.t = threading.Thread(target=self._serve, daemon=True)
        self.t.start()
        self.conn = None

    def _serve(self):
        while not self.stop:
            try:
                s, _ = self.lsock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._peer, args=(s,), daemon=True).start()

    def _peer(self, s):
        s.settimeout(0.2)
        buf = bytearray()
        while not self.stop:
            try:
                chunk = s.recv(1 << 20)
            except socket.timeout:
                continue
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while len(buf) >= 4:
                n = struct.unpack_from(">I", buf)[0]
                if len(buf) < 4 + n:
                    break
                m = bw.unpack(bytes(buf[4:4 + n]))
                del buf[:4 + n]
                op, rid = m[0], m[1]
                if op == 1:
                    rep = [0, rid, 1, 0, 2, self.inc, 0, self.name, 250,
                           1 << 20, (1 << 20) + 65536, 1024]
                elif op == OPS["EPOCH_PROPOSE"]:
                    self.seen.append(("PROPOSE", m[3][3]))
                    if not self.ack:
                        continue
                    rep = [0, rid]
                else:
                    self.seen.append(({37: "COMMIT", 38: "ABORT"}.get(op, op),
                                      m[3] if len(m) > 3 else None))
                    rep = [0, rid]
                s.sendall(bw.frame(bw.pack(rep)))

    def join(self):
        self.conn = bw.Conn(self.coord_port, role=ROLE_NODE)
        return self.conn.call(OPS["JOIN"], 2, self.name,
                              "127.0.0.1:%d" % self.port, 1000000, self.inc)

    def heartbeat(self, stats=None):
        if stats is None:
            return self.conn.call(OPS["HEARTBEAT"], 3, self.name, self.inc)
        return self.conn.call(OPS["HEARTBEAT"], 3, self.name, self.inc, stats)

    def close(self):
        self.stop = True
        if self.conn:
            self.conn.close()
        self.lsock.close()


class Coord:
    """brim-coord on a free port with its state in DDIR (file mode; see
    coord_membership_etcd.py for the same cases on etcd)."""

    def state_args(self, ddir):
        """The options that say where the state is kept."""
        return ["--data-dir", ddir]

    def ready(self):
        """Wait until it serves membership (file mode: once listening)."""

    def __init__(self, binary, ddir, *args):
        self.port = bw.free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="brim-coord-",
                                               suffix=".log", delete=False)
        self.cmd = [binary, "--listen", "127.0.0.1:%d" % self.port] + \
            self.state_args(ddir) + ["--partitions", "256",
                                     "--tokens", "16"] + [str(a) for a in args]
        self.proc = subprocess.Popen(self.cmd, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("brim-coord exited: %s" % self.output())
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "coord did not start"
                time.sleep(0.05)
        self.ready()

    def output(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def kill(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            self.proc.wait(timeout=10)
        os.unlink(self.log.name) if os.path.exists(self.log.name) else None

    def conn(self, role=bw.ROLE_CLIENT):
        return bw.Conn(self.port, role=role)


def fetch(c, rid=50):
    rep = c.call(OPS["MAP_FETCH"], rid)
    assert rep[0] == 0, rep
    return topo_decode(rep[2])


def wait_epoch(co, pred, timeout=8.0):
    c = co.conn()
    deadline = time.monotonic() + timeout
    try:
        for _ in range(int(timeout / 0.05) + 1):
            t = fetch(c)
            if pred(t):
                return t
            assert time.monotonic() < deadline, "timed out; last %r" % (
                {k: t[k] for k in ("epoch", "members")},)
            time.sleep(0.05)
    finally:
        c.close()
    raise AssertionError("unreachable")


def cluster_of(binary, order, *args, d=None):
    d = d or tempfile.mkdtemp(prefix="brim-coord-")
    co = Coord(binary, d, *args)
    nodes = []
    try:
        for name in order:
            n = FakeNode(name, co.port)
            nodes.append(n)
            rep = n.join()
            assert rep[0] == 0, rep
        t = wait_epoch(co, lambda t: len(t["members"]) == len(order))
        return co, nodes, d, t
    except BaseException:
        co.kill()
        for n in nodes:
            n.close()
        shutil.rmtree(d, ignore_errors=True)
        raise


def teardown(co, nodes, d):
    co.kill()
    for n in nodes:
        n.close()
    shutil.rmtree(d, ignore_errors=True)


def case_join_order(binary):
    # The same new cluster (cluster id and seed) twice: create it, copy
    # its state file before any join.
    base = tempfile.mkdtemp(prefix="brim-coord-")
    Coord(binary, base).kill(signal.SIGTERM)
    owners = []
    for order in (["a", "b", "c"], ["c", "a", "b"]):
        d = tempfile.mkdtemp(prefix="brim-coord-")
        shutil.copy(os.path.join(base, "state"), d)
        co, nodes, d, t = cluster_of(binary, order, d=d)
        try:
            assert t["members"] == ["a", "b", "c"], t["members"]
            assert all(o < 3 for o in t["owner"]), "unowned partition"
            for n in nodes:
                for _ in range(40):         # the COMMIT may trail MAP_FETCH
                    if ("COMMIT", t["epoch"]) in n.seen:
                        break
                    time.sleep(0.05)
                assert ("COMMIT", t["epoch"]) in n.seen, n.seen
            owners.append(t["owner"])
        finally:
            teardown(co, nodes, d)
    shutil.rmtree(base, ignore_errors=True)
    assert owners[0] == owners[1], "join order changed the map"


def case_pending_timeout(binary):
    d = tempfile.mkdtemp(prefix="brim-coord-")
    co = Coord(binary, d, "--pending-timeout-ms", "500")
    n = FakeNode("mute", co.port, ack=False)
    try:
        assert n.join()[0] == 0
        deadline = time.monotonic() + 5
        while not [s for s in n.seen if s[0] == "ABORT"]:
            assert time.monotonic() < deadline, n.seen
            n.heartbeat()
            time.sleep(0.1)
        while len([s for s in n.seen if s[0] == "PROPOSE"]) < 2:
            assert time.monotonic() < deadline + 3, n.seen
            n.heartbeat()
            time.sleep(0.1)
        props = [s[1] for s in n.seen if s[0] == "PROPOSE"]
        assert props[1] > props[0], "epoch number reused: %r" % props
        c = co.conn()
        assert fetch(c)["epoch"] == 0
        c.close()
    finally:
        teardown(co, [n], d)


def case_dead_member(binary):
    co, nodes, d, t = cluster_of(binary, ["a", "b"], "--dead-after-ms",
                                 "1000")
    try:
        start = time.monotonic()
        deadline = start + 2.0
        while time.monotonic() < deadline:
            nodes[0].heartbeat()            # b stays silent
            time.sleep(0.1)
            c = co.conn()
            t = fetch(c)
            c.close()
            if t["members"] == ["a"]:
                break
        assert t["members"] == ["a"], t
        assert all(o == 0 for o in t["owner"]), "partition without owner"
    finally:
        teardown(co, nodes, d)


def case_leave_last(binary):
    co, nodes, d, t = cluster_of(binary, ["a", "b"])
    try:
        adm = co.conn(ROLE_ADMIN)
        rep = adm.call(OPS["LEAVE"], 7, "b", 0)
        assert rep[0] == 0, rep
        t2 = wait_epoch(co, lambda x: x["members"] == ["a"])
        moved = [p for p in range(t["P"]) if t["owner"][p] == 0]
        assert all(t2["owner"][p] == 0 for p in moved), "a's partitions moved"
        rep = adm.call(OPS["LEAVE"], 8, "a", 0)
        assert rep[0] != 0 and b"lost" in bytes(rep[2], "utf8") \
            if isinstance(rep[2], str) else b"lost" in rep[2], rep
        rep = adm.call(OPS["LEAVE"], 9, "a", 1)
        assert rep[0] == 0, rep
        t3 = wait_epoch(co, lambda x: x["members"] == [])
        assert all(o == 0xffff for o in t3["owner"])
        adm.close()
    finally:
        teardown(co, nodes, d)


def case_duplicate_name(binary):
    co, nodes, d, t = cluster_of(binary, ["a"])
    try:
        b = FakeNode("a", co.port)
        nodes.append(b)
        rep = b.join()
        assert rep[0] != 0 and "a" in str(rep[2]), rep
        nodes[0].conn.close()
        nodes[0].conn = None
        time.sleep(0.2)
        rep = b.join()
        assert rep[0] == 0, rep
    finally:
        teardown(co, nodes, d)


def case_restart(binary):
    co, nodes, d, t = cluster_of(binary, ["a", "b"])
    try:
        co.kill()
        co = Coord(binary, d)
        c = co.conn()
        t2 = fetch(c)
        c.close()
        assert t2["epoch"] == t["epoch"] and t2["owner"] == t["owner"]
        co.kill(signal.SIGTERM)
        with open(os.path.join(d, "state"), "r+b") as f:
            f.seek(40)
            b = f.read(1)
            f.seek(40)
            f.write(bytes([b[0] ^ 0xff]))
        p = subprocess.run([binary, "--listen", "127.0.0.1:%d" %
                            bw.free_port(), "--data-dir", d],
                           capture_output=True, timeout=10)
        assert p.returncode != 0, p
        assert b"refusing" in p.stderr, p.stderr
    finally:
        teardown(co, nodes, d)


def case_failed_start_writes_nothing(binary):
    """A brim-coord whose --listen (or --http-listen) port is taken exits 1
    and writes no state: a tester's corrected start with --partitions 1024
    was told "keeping the stored ones" and ran at the failed start's
    default P (65536), from a state no node had ever seen."""
    d = tempfile.mkdtemp(prefix="brim-coord-failed-")
    busy = socket.socket()
    try:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        taken = "127.0.0.1:%d" % busy.getsockname()[1]
        for args in (["--listen", taken],
                     ["--listen", "127.0.0.1:%d" % bw.free_port(),
                      "--http-listen", taken]):
            p = subprocess.run([binary] + args + ["--data-dir", d],
                               capture_output=True, timeout=10)
            assert p.returncode == 1, p
            assert b"in use" in p.stderr, p.stderr
            assert not os.path.exists(os.path.join(d, "state")), \
                (args, os.listdir(d))
        co = Coord(binary, d)               # --partitions 256
        try:
            c = co.conn()
            t = fetch(c)
            c.close()
            assert t["P"] == 256, t["P"]
            assert "keeping the stored ones" not in co.output(), co.output()
            assert os.path.exists(os.path.join(d, "state")), os.listdir(d)
        finally:
            co.kill(signal.SIGTERM)
    finally:
        busy.close()
        shutil.rmtree(d, ignore_errors=True)


def case_epoch_reported(binary):
    """Issue 15: a node that reports an epoch at or above next_epoch (a
    state restored from an older copy) makes the next proposal go above
    it: an epoch number is never handed out twice."""
    co, nodes, d, t = cluster_of(binary, ["a"])
    try:
        a = nodes[0]
        a.conn.send(bw.frame(bw.pack([OPS["HEARTBEAT"], 3, 100, a.name,
                                      a.inc])))
        rep = a.conn.reply()
        assert rep[0] == 0, rep
        b = FakeNode("b", co.port)
        nodes.append(b)
        assert b.join()[0] == 0
        t2 = wait_epoch(co, lambda t: len(t["members"]) == 2)
        assert t2["epoch"] == 101, (t["epoch"], t2["epoch"])
        assert "a node reports epoch 100" in co.output(), co.output()
    finally:
        teardown(co, nodes, d)


def case_bad_settings(binary):
    """Every bad value or combination is a usage error: exit 2, a message
    naming the options as typed, and nothing written to the data dir (it
    is checked before anything is opened or bound)."""
    missing = os.path.join(tempfile.gettempdir(), "brim-coord-no-such-dir")
    cases = (
        (["--tokens", "0"], [b"--tokens", b"0", b"1 to 10000"]),
        (["--partitions", "1000"],
         [b"--partitions: 1000 is not a power of two from 256 to 1048576"]),
        (["--partitions", "7"], [b"--partitions: 7 is not a power of two"]),
        (["--eps", "-1"], [b"--eps"]),
        # The option's name once, not "--eps: eps:" (a tester's report).
        (["--eps", "abc"], [b'--eps: "abc" is not a plain']),
        (["--heartbeat-ms", "5000", "--dead-after-ms", "100"],
         [b"--dead-after-ms 100 must be above --heartbeat-ms 5000"]),
        (["--heartbeat-ms", "5000"],
         [b"--dead-after-ms 3000 must be above --heartbeat-ms 5000"]),
        (["--data-dir", missing],
         [b"--data-dir " + missing.encode() +
          b": the data directory does not exist"]),
        (["--data-dir", "/etc/hostname"], [b"--data-dir /etc/hostname: not "
                                           b"a directory"]),
        (["--secret-file", "/nonexistent/secret"],
         [b"--secret-file", b"/nonexistent/secret"]),
    )
    for args, words in cases:
        d = tempfile.mkdtemp(prefix="brim-coord-")
        p = subprocess.run([binary, "--listen", "127.0.0.1:1",
                            "--data-dir", d] + args, capture_output=True,
                           timeout=10)
        left = os.listdir(d)
        shutil.rmtree(d, ignore_errors=True)
        assert p.returncode == 2, (args, p.returncode, p.stderr)
        for w in words:
            assert w in p.stderr, (args, w, p.stderr)
        internal = (b"brim-coord: coord:", b"placement:")   # old names
        assert not any(w in p.stderr for w in internal), (args, p.stderr)
        assert left == [], (args, left)
    # An --etcd value that does not parse is bad usage too (a tester saw
    # exit 1, against operations.md's 2).
    for url in ("127.0.0.1:22379", "ftp://x"):
        p = subprocess.run([binary, "--listen", "127.0.0.1:1", "--etcd", url,
                            "--name", "z"], capture_output=True, timeout=10)
        assert p.returncode == 2 and b"is not http://HOST:PORT" in p.stderr, \
            (url, p.returncode, p.stderr)


def _text(v):
    return v.decode() if isinstance(v, (bytes, bytearray)) else v


def _map(m):
    """A decoded reply map with text keys (nested maps and lists too)."""
    if isinstance(m, dict):
        return {_text(k): _map(v) for k, v in m.items()}
    if isinstance(m, list):
        return [_map(v) for v in m]
    return _text(m)


def plan(adm, kind, name, weight=0, rid=60):
    args = (kind, name, weight) if kind == 1 else (kind, name)
    rep = adm.call(OPS["PLAN"], rid, *args)
    return rep[0], (_map(rep[2]) if rep[0] == 0 else rep[2:])


def cluster_stats(c, rid=61):
    rep = c.call(OPS["CLUSTER_STATS"], rid)
    assert rep[0] == 0, rep
    return _map(rep[2])


def diff(t1, t2):
    """Partitions whose owner (by name) differs between two topologies."""
    def name(t, o):
        return t["members"][o] if o < len(t["members"]) else None
    return [p for p in range(t1["P"])
            if name(t1, t1["owner"][p]) != name(t2, t2["owner"][p])]


PLAN_KEYS = ("partitions_moved", "moved_arc", "moved_cap", "ideal", "churn",
             "cap_before", "cap_after", "keys_estimate")


def case_plan_join(binary):
    co, nodes, d, t = cluster_of(binary, ["a", "b", "c"])
    try:
        adm = co.conn(ROLE_ADMIN)
        # Keys per node for the estimate: a holds 1000 keys.
        nodes[0].heartbeat({"keys": 1000, "bytes": 5000, "partitions": 1,
                            "requests_per_sec": 7})
        st, p = plan(adm, 1, "d")
        assert st == 0, p
        for k in PLAN_KEYS:
            assert k in p, (k, p)
        assert p["ideal"] == t["P"] / 4, p
        assert p["partitions_moved"] == p["moved_arc"] + p["moved_cap"], p
        assert abs(p["churn"] - p["partitions_moved"] / p["ideal"]) < 1e-9
        assert p["cap_after"] <= p["cap_before"], p
        # Nothing changed: same epoch, same members.
        assert fetch(adm)["epoch"] == t["epoch"]
        assert plan(adm, 1, "a")[0] != 0, "join of a member planned"
        # Now d joins for real: the committed diff is what PLAN said.
        dn = FakeNode("d", co.port)
        nodes.append(dn)
        assert dn.join()[0] == 0
        t2 = wait_epoch(co, lambda x: x["members"] == ["a", "b", "c", "d"])
        moved = diff(t, t2)
        assert len(moved) == p["partitions_moved"], (len(moved), p)
        a_moved = len([q for q in moved if t["owner"][q] == 0])
        a_own = len([q for q in range(t["P"]) if t["owner"][q] == 0])
        want = round(1000 * a_moved / a_own)
        assert abs(p["keys_estimate"] - want) <= 1, (p, want)
        adm.close()
    finally:
        teardown(co, nodes, d)


def case_plan_leave(binary):
    co, nodes, d, t = cluster_of(binary, ["a", "b", "c"])
    try:
        adm = co.conn(ROLE_ADMIN)
        st, p = plan(adm, 2, "b")
        assert st == 0, p
        b_own = len([q for q in range(t["P"]) if t["owner"][q] == 1])
        assert p["partitions_moved"] == b_own, (p, b_own)
        assert p["ideal"] == b_own and abs(p["churn"] - 1.0) < 1e-9, p
        assert plan(adm, 2, "zz")[0] != 0, "leave of a non-member planned"
        rep = adm.call(OPS["LEAVE"], 7, "b", 0)
        assert rep[0] == 0, rep
        t2 = wait_epoch(co, lambda x: x["members"] == ["a", "c"])
        moved = diff(t, t2)
        assert sorted(moved) == sorted(q for q in range(t["P"])
                                       if t["owner"][q] == 1), "not b's"
        assert len(moved) == p["partitions_moved"]
        # The last member's leave is refused by PLAN.
        assert adm.call(OPS["LEAVE"], 8, "c", 0)[0] == 0
        wait_epoch(co, lambda x: x["members"] == ["a"])
        st, why = plan(adm, 2, "a")
        assert st != 0 and "lost" in str(why), why
        adm.close()
    finally:
        teardown(co, nodes, d)


def case_cluster_stats(binary):
    co, nodes, d, t = cluster_of(binary, ["a", "b", "c"])
    try:
        c = co.conn()
        for i, n in enumerate(nodes):
            n.heartbeat({"keys": 100 * (i + 1), "bytes": 1000,
                         "partitions": 5, "requests_per_sec": 3})
        s = cluster_stats(c)
        for k in ("epoch", "eps", "partitions", "tokens", "cap", "within_cap",
                  "max_mean_partitions", "min_mean_partitions",
                  "max_mean_keys", "nodes", "migration"):
            assert k in s, (k, s)
        assert s["eps"] == "0.05" and s["partitions"] == 256, s
        assert s["epoch"] == t["epoch"] and s["within_cap"] is True, s
        assert s["cap"] == -(-256 * 105 // 300), s      # ceil(1.05 P / N)
        assert abs(s["max_mean_keys"] - 300 / 200) < 1e-9, s
        assert s["min_mean_partitions"] <= 1 <= s["max_mean_partitions"]
        assert len(s["nodes"]) == 3
        tot = 0
        for nd, n in zip(sorted(s["nodes"], key=lambda x: x["name"]), nodes):
            for k in ("name", "addr", "state", "partitions", "displaced",
                      "cap", "load", "keys", "bytes", "requests_per_sec"):
                assert k in nd, (k, nd)
            assert nd["state"] == "up" and nd["partitions"] <= nd["cap"], nd
            assert nd["requests_per_sec"] == 3, nd
            tot += nd["partitions"]
        assert tot == 256
        m = s["migration"]
        for k in ("active", "partitions_total", "partitions_done",
                  "moved_arc", "moved_cap", "keys_moved"):
            assert k in m, (k, m)
        # After a join and a leave, still within the cap, and the
        # migration counters are the last change's.
        adm = co.conn(ROLE_ADMIN)
        st, p = plan(adm, 1, "d")
        dn = FakeNode("d", co.port)
        nodes.append(dn)
        assert dn.join()[0] == 0
        wait_epoch(co, lambda x: len(x["members"]) == 4)
        s = cluster_stats(c)
        assert s["within_cap"] is True, s
        assert s["migration"]["moved_arc"] == p["moved_arc"], (s, p)
        assert s["migration"]["moved_cap"] == p["moved_cap"], (s, p)
        assert adm.call(OPS["LEAVE"], 9, "a", 0)[0] == 0
        wait_epoch(co, lambda x: x["members"] == ["b", "c", "d"])
        s = cluster_stats(c)
        assert s["within_cap"] is True and len(s["nodes"]) == 3, s
        adm.close()
        c.close()
    finally:
        teardown(co, nodes, d)


def case_stats_empty(binary):
    co, nodes, d, t = cluster_of(binary, ["a"])
    try:
        adm = co.conn(ROLE_ADMIN)
        assert adm.call(OPS["LEAVE"], 7, "a", 1)[0] == 0
        wait_epoch(co, lambda x: x["members"] == [])
        s = cluster_stats(adm)
        assert s["cap"] == 0 and s["nodes"] == [] or all(
            n["partitions"] == 0 for n in s["nodes"]), s
        assert s["max_mean_partitions"] == 0 and s["within_cap"] is True, s
        # A join planned on an empty cluster: a fresh placement.
        st, p = plan(adm, 1, "z")
        assert st == 0 and p["partitions_moved"] == 256, p
        assert p["ideal"] == 256 and p["cap_before"] == 0, p
        assert co.proc.poll() is None, "coordinator died"
        assert "division" not in co.output().lower()
        adm.close()
    finally:
        teardown(co, nodes, d)


def case_node_leave_self(binary):
    co, nodes, d, t = cluster_of(binary, ["a", "b"])
    try:
        # A node may ask its own leave on its connection, not another's.
        rep = nodes[0].conn.call(OPS["LEAVE"], 20, "b", 0)
        assert rep[0] != 0, rep
        rep = nodes[1].conn.call(OPS["LEAVE"], 21, "b", 0)
        assert rep[0] == 0, rep
        wait_epoch(co, lambda x: x["members"] == ["a"])
        # The last one is refused, and force is ignored for a node.
        rep = nodes[0].conn.call(OPS["LEAVE"], 22, "a", 1)
        assert rep[0] != 0 and "lost" in str(rep[2:]), rep
    finally:
        teardown(co, nodes, d)


def case_join_after_leave(binary):
    """A node whose leave committed while it did not hear of it (the
    coordinator restarted first) reconnects and sends JOIN with the epoch
    it holds, which has it as a member (a tester's flake of
    fault.leave_committed_coord_killed: the restarted coordinator took
    such a JOIN as a new member's). It must be refused DENIED and not
    come back in; the same name without a member epoch (a new process)
    still joins."""
    # No heartbeats in this case: nobody must be declared dead.
    slow = ("--dead-after-ms", "60000")
    co, nodes, d, t = cluster_of(binary, ["a", "b", "c"], *slow)
    try:
        held = t["epoch"]                   # c's last epoch as a member
        adm = co.conn(ROLE_ADMIN)
        rep = adm.call(OPS["LEAVE"], 7, "c", 0)
        adm.close()
        assert rep[0] == 0, rep
        t2 = wait_epoch(co, lambda x: x["members"] == ["a", "b"])
        assert t2["epoch"] > held, (t2["epoch"], held)
        co.kill()
        co = Coord(binary, d, *slow)
        back = FakeNode("c", co.port)
        nodes.append(back)
        back.conn = bw.Conn(co.port, role=ROLE_NODE)
        rep = back.conn.call(OPS["JOIN"], 2, "c", "127.0.0.1:%d" % back.port,
                             1000000, back.inc, held)
        assert rep[0] == bt.ST["DENIED"], rep
        assert "removed it" in str(rep[2:]), rep
        for n in nodes[:2]:
            n.conn.close()
            n.coord_port = co.port
            assert n.join()[0] == 0
        time.sleep(0.5)                     # room for a change to start
        c = co.conn()
        t3 = fetch(c)
        c.close()
        out = co.output()
        assert t3["members"] == ["a", "b"], t3["members"]
        assert not [ln for ln in out.splitlines()
                    if "member c (" in ln and "joining" in ln], out
        # A new incarnation (no member epoch) is taken as a new member:
        # its JOIN is accepted and the coordinator logs it joining.
        fresh = FakeNode("c", co.port)
        nodes.append(fresh)
        assert fresh.join()[0] == 0
        deadline = time.monotonic() + 5
        while not [ln for ln in co.output().splitlines()
                   if "member c (" in ln and "joining" in ln]:
            assert time.monotonic() < deadline, co.output()
            time.sleep(0.05)
    finally:
        teardown(co, nodes, d)


CASES = bt.Cases((k[5:], v) for k, v in globals().items()
                  if k.startswith("case_"))


def main():
    return bt.main(CASES, options=[("--coord", dict(
        help="the brim-coord binary"))], need=["coord"],
        run=lambda fn, a: fn(a.coord))


if __name__ == "__main__":
    sys.exit(main())
