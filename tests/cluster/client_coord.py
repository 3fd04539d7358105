#!/usr/bin/env python3
"""tests/cluster/client_coord.py - libbrim and brimctl in cluster mode
against a real brim-coord and three real brim-nodes on free loopback ports
(--partitions 1024, temp dir; every process stopped by PID).

    client_coord.py --list
    client_coord.py --coord C --node N --ctl CTL --tool TOOL CASE

Cases: load, mload, spread, brimctl, stale, leave_last, learn (a client
learns a join's epoch from the epoch its data replies carry),
coord_restart (the coordinator is killed and restarted under a GET/SET
loop: no call fails, and epochs are learned after it), flush, fleet
(1,000 handles: the coordinator keeps only the nodes' connections; a
client started while it is stopped, or killed, reads and writes),
node_map (a node's MAP_FETCH, the epoch in its data replies, RETRY once
its lease is out),
admin (the typed calls of <brim/admin.h> give what the wire says:
brim_members() and brim_cluster_stats() against MEMBERS and
CLUSTER_STATS decoded here, two plans, the refusals, and a leave that
takes the node out of the list),
notleader_loop (two fake followers naming each other: brimctl's admin
call visits each once and is answered by the real coordinator).
"""
import json
import os
import resource
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "support")]
import brimtest as bt  # noqa: E402
import brimwire as bw  # noqa: E402
import node_cluster as nc  # noqa: E402

MAP_FETCH = bt.OP["MAP_FETCH"]
P = 1024
STATES = {1: "joining", 2: "up", 3: "leaving", 4: "dead"}


def more_files():
    """preexec_fn: RLIMIT_NOFILE's soft limit up to its hard one (a node
    of the fleet case holds over 1,000 connections; Debian's soft limit
    is 1,024)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > 65536:
        hard = 65536
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Proc:
    def __init__(self, cmd, log):
        self.cmd, self.log = cmd, log
        self.f = open(log, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.f,
                                     stderr=subprocess.STDOUT,
                                     preexec_fn=more_files)

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        self.f.close()

    def output(self):
        with open(self.log, errors="replace") as f:
            return f.read()


def wait_port(port, proc, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        if proc.proc.poll() is not None:
            raise AssertionError("%s exited: %s" % (proc.cmd[0],
                                                    proc.output()))
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "%s did not listen" % (
                proc.cmd,)
            time.sleep(0.05)


def topo(port):
    c = bw.Conn(port)
    try:
        rep = c.call(MAP_FETCH, 7)
    finally:
        c.close()
    assert rep[0] == 0, rep
    t = rep[2]
    members = [(m[0] if isinstance(m[0], str) else m[0].decode(), m[3])
               for m in t[7]]
    owner = struct.unpack("<%dH" % t[4], t[8])
    return {"epoch": t[3], "members": members, "owner": owner}


class Cluster:
    def __init__(self, args, nnodes=3, node_args=()):
        self.args = args
        self.node_args = list(node_args)
        self.dir = tempfile.mkdtemp(prefix="brim-client-coord-")
        self.port = bw.free_port()
        self.addr = "127.0.0.1:%d" % self.port
        self.nodes = {}
        os.makedirs(os.path.join(self.dir, "coord"), exist_ok=True)
        self.coord = None
        try:
            self.start_coord()
            for i in range(1, nnodes + 1):
                self.add("node%d" % i)
            self.wait(lambda t: self.settled(t, nnodes))
        except BaseException:
            self.close()
            raise

    def start_coord(self):
        """Start brim-coord on the cluster's port and data dir (again)."""
        self.coord = Proc([self.args.coord, "--listen", self.addr,
                           "--data-dir", os.path.join(self.dir, "coord"),
                           "--partitions", str(P)],
                          os.path.join(self.dir, "coord.log"))
        wait_port(self.port, self.coord)

    def add(self, name):
        port = bw.free_port()
        p = Proc([self.args.node, "--name", name, "--coordinator", self.addr,
                  "--listen", "127.0.0.1:%d" % port, "--partitions", str(P)]
                 + self.node_args,
                 os.path.join(self.dir, name + ".log"))
        self.nodes[name] = (p, port)
        wait_port(port, p)
        return port

    @staticmethod
    def settled(t, n):
        return (t["epoch"] > 0 and len(t["members"]) == n
                and all(s == 2 for _, s in t["members"])
                and all(o < n for o in t["owner"]))

    def wait(self, pred, timeout=15.0):
        deadline = time.monotonic() + timeout
        while True:
            t = topo(self.port)
            if pred(t):
                return t
            assert time.monotonic() < deadline, "cluster did not settle: " \
                "epoch %d members %r" % (t["epoch"], t["members"])
            time.sleep(0.05)

    def close(self):
        for p, _ in self.nodes.values():
            p.stop()
        if self.coord is not None:
            self.coord.stop()
        if os.environ.get("BRIM_KEEP_DIR"):
            print("kept", self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def logs(self):
        out = ["--- coord\n" + self.coord.output()]
        for name, (p, _) in self.nodes.items():
            out.append("--- %s\n%s" % (name, p.output()[-3000:]))
        return "\n".join(out)


class Tool:
    """client_coord_tool run interactively: lines to its stdin, lines from
    its stdout, every read bounded in time; stopped by PID."""

    def __init__(self, cl, *args):
        self.err = os.path.join(cl.dir, "tool.err")
        with open(self.err, "wb") as f:
            self.p = subprocess.Popen(list(args), stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=f,
                                      preexec_fn=more_files)
        self.buf = b""

    def stderr(self):
        with open(self.err, errors="replace") as f:
            return f.read()

    def line(self, timeout=30.0):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            assert left > 0, "no line from the tool in %.0f s: %s" % (
                timeout, self.stderr())
            if select.select([self.p.stdout], [], [], left)[0]:
                chunk = os.read(self.p.stdout.fileno(), 4096)
                assert chunk, "the tool exited: %s%s" % (
                    self.buf.decode(errors="replace"), self.stderr())
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def send(self, text):
        self.p.stdin.write(text.encode() + b"\n")
        self.p.stdin.flush()

    def finish(self, timeout=60.0):
        """The last line, once the tool has exited 0."""
        out, _ = self.p.communicate(timeout=timeout)    # closes stdin
        last = (self.buf + out).decode().strip().splitlines()[-1]
        assert self.p.returncode == 0, (last, self.stderr())
        return dict(kv.split("=", 1) for kv in last.split()[1:])

    def kill(self):
        if self.p.poll() is None:
            os.kill(self.p.pid, signal.SIGKILL)
            self.p.wait(timeout=5)


def run(cmd, want=0, env=None, inp=None):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                       env=env, input=inp)
    if want is not None and r.returncode != want:
        raise AssertionError("%s: exit %d, want %d\nstdout: %s\nstderr: %s"
                             % (cmd, r.returncode, want, r.stdout, r.stderr))
    return r


def node_stat(port, name):
    """Figure NAME of the node's STATS on PORT, at its top level or in
    one of its sections."""
    c = bw.Conn(port)
    try:
        st = bw.stats(c)
    finally:
        c.close()
    if name in st:
        return st[name]
    for v in st.values():
        if isinstance(v, dict) and name in v:
            return v[name]
    raise AssertionError("no %s in STATS: %r" % (name, st))


def node_keys(port):
    return node_stat(port, "keys")


def case_load(cl, a):
    r = run([a.tool, cl.addr, "load", "500"])
    print(r.stdout.strip())


def case_mload(cl, a):
    r = run([a.tool, cl.addr, "mload", "2000"])
    print(r.stdout.strip())


def case_spread(cl, a):
    run([a.tool, cl.addr, "load", "500"])
    counts = {n: node_keys(port) for n, (_, port) in cl.nodes.items()}
    print("keys per node:", counts)
    assert sum(counts.values()) == 500, counts
    assert all(v > 0 for v in counts.values()), counts


def ctl(cl, a, *args, want=0, env_coord=False):
    env = dict(os.environ)
    env.pop("BRIM_SERVER", None)
    cmd = [a.ctl]
    if env_coord:
        env["BRIM_COORDINATOR"] = cl.addr
    else:
        cmd += ["--coordinator", cl.addr]
    return run(cmd + list(args), want=want, env=env)


def ctl_at(a, seeds, *args, want=0):
    """brimctl --coordinator SEEDS ARGS, no BRIM_* from the environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRIM_")}
    return run([a.ctl, "--coordinator", seeds] + list(args), want=want,
               env=env)


def case_brimctl(cl, a):
    ctl(cl, a, "set", "alpha", "one")
    ctl(cl, a, "set", "beta", "two", env_coord=True)
    assert ctl(cl, a, "get", "alpha").stdout == "one"
    assert ctl(cl, a, "get", "beta", env_coord=True).stdout == "two"
    ctl(cl, a, "get", "missing", want=1)
    nodes = json.loads(ctl(cl, a, "nodes", "--json").stdout)
    assert isinstance(nodes, list) and len(nodes) == 3, nodes
    for n in nodes:
        for f in ("name", "addr", "state", "partitions"):
            assert f in n, (f, n)
    assert sorted(n["name"] for n in nodes) == ["node1", "node2", "node3"]
    assert sum(n["partitions"] for n in nodes) == P, nodes
    text = ctl(cl, a, "nodes").stdout
    assert "node1" in text and "node3" in text, text
    # The coordinator that answered, first (issue 15): one in file mode.
    first = text.splitlines()[0]
    assert first == "coordinator: %s (file mode)" % cl.addr, text
    st = json.loads(ctl(cl, a, "stats", "--json").stdout)
    assert st["coordinator"] == {"name": "", "addr": cl.addr,
                                 "mode": "file", "term": 0,
                                 "leading": True}, st["coordinator"]
    text = ctl(cl, a, "stats").stdout
    assert text.splitlines()[0] == first, text
    r = ctl(cl, a, "leave", "nosuch", want=1)
    assert r.stderr.strip(), "no message for a leave of a non-member"
    t0 = topo(cl.port)["epoch"]
    ctl(cl, a, "leave", "node3")
    t = cl.wait(lambda t: t["epoch"] > t0 and all(
        o < len(t["members"]) and t["members"][o][0] != "node3"
        for o in t["owner"]))
    print("after leave: epoch %d members %r" % (t["epoch"], t["members"]))
    ctl(cl, a, "set", "gamma", "three")
    assert ctl(cl, a, "get", "gamma").stdout == "three"
    st = ctl(cl, a, "stats", "--json")
    json.loads(st.stdout)
    print(ctl(cl, a, "stats").stdout)
    print(ctl(cl, a, "nodes").stdout)
    r = ctl(cl, a, "plan", "join", "node9", "--weight", "2", want=None)
    print("plan join: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    assert r.returncode == 0 or r.stderr.strip(), r


def case_stale(cl, a):
    p = subprocess.Popen([a.tool, cl.addr, "stale", "500"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line.startswith("ready"), (line, p.stderr.read())
        t0 = topo(cl.port)["epoch"]
        cl.add("node4")
        cl.wait(lambda t: t["epoch"] > t0 and Cluster.settled(t, 4))
        out, err = p.communicate("go\n", timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    print(out.strip(), err.strip())
    assert p.returncode == 0, (out, err)


def case_leave_last(cl, a):
    # Three leaves back to back: the third is of the last member that is
    # not leaving, and is refused as the last member's is (a tester's
    # three quick leaves were all accepted, and the cluster stopped with
    # every key dropped).
    ctl(cl, a, "leave", "node1")
    ctl(cl, a, "leave", "node2")
    r = ctl(cl, a, "leave", "node3", want=1)
    print("leave of the last node not leaving:", r.stderr.strip())
    assert "last member" in r.stderr and "--force" in r.stderr, r.stderr
    cl.wait(lambda t: all(o < len(t["members"])
                          and t["members"][o][0] == "node3"
                          for o in t["owner"]))
    r = ctl(cl, a, "leave", "node3", want=1)
    print("leave of the last node:", r.stderr.strip())
    # What is refused and why, the flag named exactly; not an access
    # problem (a new user read "access denied" as a wrong secret).
    assert "last member" in r.stderr and "--force" in r.stderr, r.stderr
    assert "access denied" not in r.stderr and "secret" not in r.stderr, \
        r.stderr
    # The plan of that leave is refused for the same reason, said the
    # same way (a tester's `plan leave` of the last node was blamed on
    # the secret).
    r = ctl(cl, a, "plan", "leave", "node3", want=1)
    print("plan of the last node's leave:", r.stderr.strip())
    assert "last member" in r.stderr, r.stderr
    assert "access denied" not in r.stderr and "secret" not in r.stderr, \
        r.stderr
    t0 = topo(cl.port)["epoch"]
    ctl(cl, a, "leave", "node3", "--force")
    cl.wait(lambda t: t["epoch"] > t0 and all(o >= len(t["members"])
                                               for o in t["owner"]))
    r = ctl(cl, a, "set", "k", "v", want=3)
    assert "no nodes" in r.stderr, r.stderr
    r = ctl(cl, a, "get", "k", want=3)
    assert "no nodes" in r.stderr, r.stderr
    r = run([a.tool, cl.addr, "nonodes"])
    print(r.stdout.strip())


def await_join_learn(cl, t):
    """The tool says "ready epoch=E"; a 4th node joins; the tool must see
    the join's epoch from its GETs' replies. Returns the epoch."""
    line = t.line()
    assert line.startswith("ready epoch="), line
    e0 = int(line.split("=")[1])
    t0 = topo(cl.port)["epoch"]
    assert e0 == t0, (e0, t0)
    cl.add("node4")
    t1 = cl.wait(lambda t: t["epoch"] > t0 and Cluster.settled(t, 4))
    line = t.line()
    assert line.startswith("learned epoch="), line
    print("join: epoch %d -> %d, %s" % (t0, t1["epoch"], line))
    e = int(line.split()[1].split("=")[1])
    assert t0 < e <= t1["epoch"], (t0, e, t1["epoch"])
    return e


def case_learn(cl, a):
    t = Tool(cl, a.tool, cl.addr, "learn")
    try:
        await_join_learn(cl, t)
        r = t.finish()
    finally:
        t.kill()
    print(r)
    # The GET's reply named the new epoch: one fetch at connect, one for
    # the epoch learned (the key did not move, or it moved and its old
    # owner named the epoch in MOVED: either way few fetches).
    assert int(r["learned"]) + int(r["moved"]) >= 1, r
    assert 2 <= int(r["refresh"]) <= 4, r


def case_coord_restart(cl, a):
    t = Tool(cl, a.tool, cl.addr, "churn", "200")
    try:
        assert t.line() == "ready"
        marks = []
        for step in ("up", "kill", "down", "restart", "after"):
            if step == "kill":
                cl.coord.stop(signal.SIGKILL)
            elif step == "restart":
                cl.start_coord()
                cl.wait(lambda t: Cluster.settled(t, 3))
            time.sleep(0.2 if step == "kill" else 1.0)
            t.send("mark")
            line = t.line()
            assert line.startswith("mark ops="), line
            marks.append((step, int(line.split("=")[1])))
        print("ops so far:", marks)
        t.send("stop")
        line = t.line()
        assert line.startswith("stopped ops="), line
        # Calls went on while the coordinator was gone, and none failed
        # (the tool exits at the first failure).
        assert marks[2][1] > marks[1][1], marks
        await_join_learn(cl, t)
        r = t.finish()
    finally:
        t.kill()
    print(r)
    assert int(r["learned"]) + int(r["moved"]) >= 1, r
    assert int(r["worst_ms"]) < 3000, r


def case_flush(cl, a):
    """brimctl flush in cluster mode empties every node, not one."""
    run([a.tool, cl.addr, "load", "500"])
    before = {n: node_keys(port) for n, (_, port) in cl.nodes.items()}
    assert sum(before.values()) == 500 and min(before.values()) > 0, before
    out = ctl(cl, a, "flush")
    assert "flushed every node of the cluster" in out.stdout, out.stdout
    after = {n: node_keys(port) for n, (_, port) in cl.nodes.items()}
    print("keys per node before %r, after flush %r" % (before, after))
    assert sum(after.values()) == 0, after
    # One flush mark on every node, as flush_all gives: each node's own
    # clock gave marks a millisecond apart, and a later migration read
    # the other's as a newer flush and dropped what it streamed.
    marks = {n: node_stat(port, "flush_mark_ms")
             for n, (_, port) in cl.nodes.items()}
    print("flush marks %r" % (marks,))
    assert len(set(marks.values())) == 1 and min(marks.values()) > 0, marks
    # The coordinator recorded the same mark (as for flush_all), so a
    # node that joins later learns it from its JOIN reply: before, only
    # the streams it received told it.
    mark = min(marks.values())
    assert ("flush mark %d (Unix ms) recorded" % mark) in cl.coord.output(), \
        cl.coord.output()[-2000:]
    port = cl.add("node%d" % (len(cl.nodes) + 1))
    deadline = time.monotonic() + 10
    while node_stat(port, "flush_mark_ms") != mark:
        assert time.monotonic() < deadline, \
            "the joiner's flush_mark_ms is %d, not %d" % (
                node_stat(port, "flush_mark_ms"), mark)
        time.sleep(0.05)
    print("the coordinator recorded mark %d; a node joined after it "
          "learned it" % mark)


def coord_call(cl, op):
    """The OK reply's object of OP from the coordinator, decoded here."""
    c = bw.Conn(cl.port)
    try:
        rep = c.call(op, 9)
    finally:
        c.close()
    assert rep[0] == 0, rep
    return rep[2]


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def case_admin(cl, a):
    """libbrim's typed admin calls against the raw replies they decode."""
    members = coord_call(cl, "MEMBERS")
    st = coord_call(cl, "CLUSTER_STATS")
    r = run([a.tool, cl.addr, "admin"])
    print(r.stdout.strip())
    lines = [ln.split() for ln in r.stdout.splitlines()]
    got = [ln[1:] for ln in lines if ln[0] == "member"]
    want = [[text(m[0]), text(m[1]), STATES[m[2]], str(m[3]), str(m[4])]
            for m in members]
    assert got == want, (got, want)
    stats = [dict(kv.split("=", 1) for kv in ln[1:])
             for ln in lines if ln[0] == "stats"]
    assert len(stats) == 2, stats
    s0 = stats[0]
    for k in ("epoch", "partitions", "members", "cap", "displaced"):
        assert int(s0[k]) == st[k], (k, s0, st)
    assert s0["eps"] == text(st["eps"]), (s0, st)
    assert int(s0["within_cap"]) == int(st["within_cap"]), (s0, st)
    assert int(s0["required"]) == int(st["auth"]["required"]), (s0, st)
    assert int(s0["nnodes"]) == len(st["nodes"]) == 3, (s0, st)
    # The coordinator that answered: enum brim_coord_mode 1 is "file".
    k = [dict(kv.split("=", 1) for kv in ln[1:])
         for ln in lines if ln[0] == "coordinator"][0]
    want = st["coordinator"]
    assert text(want["mode"]) == "file" and want["leading"] is True, want
    assert k == {"name": text(want["name"]), "addr": text(want["addr"]),
                 "mode": "1", "term": str(want["term"]),
                 "leading": "1"}, (k, want)
    assert k["addr"] == cl.addr, k
    rows = [ln[1:] for ln in lines if ln[0] == "node"][:3]
    want = [[text(n["name"]), text(n["addr"]), text(n["state"]),
             str(round(n["weight"] * 1e6)), str(n["partitions"]),
             str(n["cap"])] for n in st["nodes"]]
    assert rows == want, (rows, want)
    assert sum(int(x[4]) for x in rows) == P, rows
    plans = {ln[1]: dict(kv.split("=", 1) for kv in ln[2:])
             for ln in lines if ln[0] == "plan"}
    assert plans["join"]["kind"] == "1" and plans["join"]["name"] == "node9"
    assert plans["leave"]["kind"] == "2", plans
    assert int(plans["join"]["cap_after"]) <= int(
        plans["join"]["cap_before"]), plans
    gone = [ln for ln in lines if ln[0] == "left"]
    assert gone and gone[0][1] == text(members[-1][0]), lines
    assert int(stats[1]["nnodes"]) == 2, stats
    t = cl.wait(lambda t: len(t["members"]) == 2)
    assert text(members[-1][0]) not in [n for n, _ in t["members"]], t


def established(port):
    """Open TCP connections whose local port is PORT (accepted by the
    process listening there), from /proc/net/tcp and tcp6."""
    n = 0
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(f) as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for r in rows:
            parts = r.split()
            if parts[3] == "01" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                n += 1
    return n


def node_conns(port):
    """A node's own count of its open connections (STATS connections)."""
    c = bw.Conn(port)
    try:
        st = bw.stats(c)
    finally:
        c.close()
    for v in [st] + [v for v in st.values() if isinstance(v, dict)]:
        if "connections" in v:
            return v["connections"]
    raise AssertionError("no connections in STATS: %r" % (st,))


def case_node_map(cl, a):
    """A node serves MAP_FETCH: the committed topology (the coordinator's,
    byte for byte) and its coordinator's address; every data reply names
    its committed epoch; with its lease run out (the coordinator and the
    other members stopped) it refuses MAP_FETCH, RETRY."""
    port = cl.nodes["node1"][1]
    c0 = bw.Conn(cl.port)
    c = bw.Conn(port)
    try:
        want = c0.call(MAP_FETCH, 5)
        rep = c.call(MAP_FETCH, 5)
        assert rep[0] == 0 and rep[2] == want[2], (rep[:2], want[:2])
        assert text(rep[3]) == cl.addr, rep[3:]
        epoch = rep[2][3]
        got = [c.call("SET", 6, b"k", b"v", 0, 0),
               c.call("GET", 7, b"k"), c.call("DEL", 8, b"k"),
               c.call("GET", 9, b"k"), c.call("MGET", 10, [b"k", b"j"])]
        print("epoch %d; replies %r" % (epoch, got))
        for r in got:
            # OK, NOTFOUND or MOVED: the epoch is the last element (MOVED
            # names it before the owner).
            assert r[-1] == epoch or (r[0] == 5 and r[3] == epoch), r
        stopped = [cl.coord] + [p for n, (p, _) in cl.nodes.items()
                                if n != "node1"]
        for p in stopped:
            os.kill(p.proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while True:
            rep = c.call(MAP_FETCH, 11)
            if rep[0] == 6:
                break
            assert time.monotonic() < deadline, "lease never ran out"
            time.sleep(0.1)
        print("lease out: %r" % (rep,))
        assert "lease" in text(rep[2]), rep
    finally:
        c.close()
        c0.close()
    for p in stopped:
        os.kill(p.proc.pid, signal.SIGKILL)
        p.proc.wait(timeout=5)
    cl.nodes["node1"][0].stop(signal.SIGQUIT)


FLEET = 1000


def case_fleet(cl, a):
    """1,000 handles seeded with the coordinator: once they have the map
    the coordinator holds only the nodes' connections; then clients
    started while the coordinator is stopped (SIGSTOP, then SIGKILL)
    serve reads and writes from node seeds alone, and so does brim-bench
    --verify seeded with a node."""
    base = established(cl.port)
    assert base == len(cl.nodes), ("coordinator connections before", base)
    t = Tool(cl, a.tool, cl.addr, "fleet", str(FLEET))
    try:
        line = t.line(timeout=90)
        assert line.startswith("ready handles=%d" % FLEET), line
        coord = established(cl.port)
        per_node = {n: node_conns(port) for n, (_, port) in cl.nodes.items()}
        per_node_tcp = {n: established(port)
                        for n, (_, port) in cl.nodes.items()}
        print("%s; coordinator connections %d (nodes %d); per node (STATS) "
              "%r, (TCP) %r" % (line, coord, len(cl.nodes), per_node,
                                per_node_tcp))
        assert coord == len(cl.nodes), coord
        # Each handle talks to the owners of its 8 keys: well over 1,000
        # client connections over the three nodes.
        assert sum(per_node.values()) >= FLEET, per_node
        assert min(per_node.values()) > FLEET // 3, per_node
        t.send("done")
        r = t.finish(timeout=60)
    finally:
        t.kill()
    print(r)
    node1 = "127.0.0.1:%d" % cl.nodes["node1"][1]
    node2 = "127.0.0.1:%d" % cl.nodes["node2"][1]
    for how in (signal.SIGSTOP, signal.SIGKILL):
        os.kill(cl.coord.proc.pid, how)
        seeds = "%s,%s" % (cl.addr, node1)   # the coordinator first
        t0 = time.monotonic()
        r = run([a.tool, seeds, "load", "200"])
        print("coordinator %s: %s (%.1f s)" % (
            how.name, r.stdout.strip(), time.monotonic() - t0))
        assert r.stdout.startswith("ok n=200"), r.stdout
        env = dict(os.environ)
        env.pop("BRIM_SERVER", None)
        env.pop("BRIM_COORDINATOR", None)
        run([a.ctl, "--coordinator", node2, "set", "nocoord", how.name],
            env=env)
        got = run([a.ctl, "--coordinator", node2, "get", "nocoord"],
                  env=env).stdout
        assert got == how.name, got
    cl.coord.proc.wait(timeout=5)
    # brim-bench (built beside brimctl) seeded with a node alone.
    bench = os.path.join(os.path.dirname(a.ctl), "brim-bench")
    r = run([bench, "--coordinator", node1, "--connections", "4",
             "--ops", "3000", "--keys", "500", "--verify", "--quiet",
             "--json"])
    j = json.loads(r.stdout.strip().splitlines()[-1])
    print("brim-bench seeded with %s, no coordinator: ops %d errors %d "
          "nodes %d" % (node1, j["ops"], j["errors"], j["nodes"]))
    assert j["ok"] and j["errors"] == 0 and j["nodes"] == 3, j


case_fleet.node_args = ["--max-conns", str(4 * FLEET)]


class FakeFollower(nc.FakeCoord):
    """node_cluster.py's fake coordinator as one in etcd mode that does
    not lead: HELLO as a coordinator of cluster CID, every other op
    NOTLEADER naming self.leader ("" by default: none)."""

    def __init__(self, cid):
        self.cid, self.leader = cid, ""
        super().__init__()

    def answer(self, r):
        if r[0] == bt.OP["HELLO"]:
            return [0, r[1], 1, self.cid, bt.ROLE["COORD"], 77, 0, "fake",
                    250, 1 << 20, 1 << 26, 1024]
        return [bt.ST["NOTLEADER"], r[1], self.leader]

    def count(self, op):
        return len(self.requests(op))


def case_notleader_loop(cl, a):
    """Two followers that name each other (a stale leader key) do not
    bounce an admin call: brimctl seeded A,B,COORD asks A, is sent to B,
    does not go back to A, and gets its answer from the coordinator of
    the list, which the nodes line then names; A and B are sent MEMBERS
    once each and CLUSTER_STATS never (the call after goes to the leader
    that answered). Then, naming no leader, each is asked once and passed
    over."""
    c = bw.Conn(cl.port)
    try:
        cid = c.call("HELLO", 1, 1, 0, bt.ROLE["ADMIN"], 0)[3]
    finally:
        c.close()
    fa, fb = FakeFollower(cid), FakeFollower(cid)
    try:
        fa.leader, fb.leader = fb.addr, fa.addr
        r = ctl_at(a, ",".join([fa.addr, fb.addr, cl.addr]), "nodes")
        print("seeded A,B,COORD: exit %d\n%s%s"
              % (r.returncode, r.stdout, r.stderr))
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert r.stdout.splitlines()[0] == \
            "coordinator: %s (file mode)" % cl.addr, r.stdout
        got = [(f.count("MEMBERS"), f.count("CLUSTER_STATS"))
               for f in (fa, fb)]
        assert got == [(1, 0), (1, 0)], got
        # No leader named (an election): each is passed over in turn.
        fa.leader = fb.leader = ""
        r = ctl_at(a, ",".join([fa.addr, fb.addr, cl.addr]), "stats")
        assert r.stdout.splitlines()[0] == \
            "coordinator: %s (file mode)" % cl.addr, r.stdout
        got = [(f.count("MEMBERS"), f.count("CLUSTER_STATS"))
               for f in (fa, fb)]
        assert got == [(1, 1), (1, 1)], got
    finally:
        fa.close()
        fb.close()


CASES = bt.Cases([
    ("load", case_load), ("mload", case_mload), ("spread", case_spread),
    ("brimctl", case_brimctl), ("stale", case_stale),
    ("leave_last", case_leave_last), ("learn", case_learn),
    ("coord_restart", case_coord_restart), ("flush", case_flush),
    ("admin", case_admin), ("fleet", case_fleet),
    ("node_map", case_node_map), ("notleader_loop", case_notleader_loop)])


def run_case(fn, a):
    cl = Cluster(a, node_args=getattr(fn, "node_args", ()))
    try:
        fn(cl, a)
    except BaseException:
        print(cl.logs()[-8000:], file=sys.stderr)
        raise
    finally:
        cl.close()


def main():
    tools = ("coord", "node", "ctl", "tool")
    return bt.main(CASES, options=[("--" + t, {}) for t in tools],
                   need=tools, run=run_case)


if __name__ == "__main__":
    sys.exit(main())
