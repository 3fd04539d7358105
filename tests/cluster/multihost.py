#!/usr/bin/env python3
"""tests/cluster/multihost.py - faults between hosts (issue 6, "A
multi-host harness"; DESIGN.md section 7 steps 6-7): brim-coord and three
brim-nodes, each in a test host of its own made by
deploy/multihost/netns.sh (a network namespace with its own address
10.77.0.(10+I) on one bridge), and a host cut off, paused or slowed.

    multihost.py --list
    multihost.py --bin BUILD/bin CASE

Cases (each its own CTest test, tests/multihost.cmake):
  partition_node       host 2 cut off: an epoch without its node within
                       dead-after + 1 s, its partitions get live owners,
                       keys on hosts 1 and 3 read throughout; after the
                       heal the node rejoins empty or exits, never serving
                       an old value
  lease_stops_serving  host 2 cut off: a client inside host 2 gets no
                       successful data reply from its node once the lease
                       (dead-after / 2) has run out, and nothing stale
                       after the heal (DESIGN.md 7 step 7)
  lease_after_pause    node2 paused (SIGSTOP) for dead-after + 1 s with
                       requests waiting: on SIGCONT it answers none of them
                       from its store (its lease ran out while it slept)
  slow_node            100 ms each way on node3's client port and on its
                       coordinator link (deploy/multihost/delay_relay.py):
                       answers through the relay stay exact, the delay can
                       be changed at run time, and no epoch changes

Layout: host 0 runs brim-coord (10.77.0.10:7400) and the test's clients;
host I (1..3) runs node I (10.77.0.(10+I):7401). Ports are fixed: every
host is a fresh namespace. Each case uses its own namespace prefix, so
cases may run side by side, and a run that crashed is cleaned up by the
next run of the same case (netns.sh down finds by prefix).

Needs root and iproute2's "ip netns": otherwise a case exits 77 (CTest
shows it skipped, which is not a pass), or fails when
BRIM_MULTIHOST_REQUIRED=1 (CI: the harness must run there).

The processes, the map helpers and the readers are migrate_basic.py's and
fault_kill.py's. Those address every process as 127.0.0.1:PORT; here a
process is an Addr (namespace, host, port), so their module-level
brimwire is swapped for a view whose Conn also accepts an Addr and makes
its socket inside the namespace (setns(2) on this thread only). Every
process is stopped by PID; the namespaces are removed at the end, also on
failure; every wait is bounded.
"""
import collections
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
MULTIHOST = os.path.normpath(os.path.join(HERE, "..", "..", "deploy",
                                          "multihost"))
sys.path[:0] = [HERE, MULTIHOST, os.path.join(HERE, "..", "support")]
import brimtest as bt  # noqa: E402
import brimwire as bw  # noqa: E402
import delay_relay  # noqa: E402
import fault_kill as fk  # noqa: E402
import migrate_basic as mb  # noqa: E402
from fault_kill import names, owners  # noqa: E402
from migrate_basic import P, part  # noqa: E402

NETNS_SH = os.path.join(MULTIHOST, "netns.sh")
RELAY_PY = os.path.join(MULTIHOST, "delay_relay.py")
SKIP = 77
DEAD_AFTER_MS = fk.DEAD_AFTER_MS            # brim-coord --dead-after-ms
LEASE_MS = DEAD_AFTER_MS // 2               # DESIGN.md 7 step 7 default
LEASE_GRACE_MS = 300                        # loop turns, timer ticks
COORD_PORT, NODE_PORT, RELAY_PORT = 7400, 7401, 7500
CASES = bt.Cases()
case = CASES


# The harness cannot run here (netns.sh exit 77): the case is skipped,
# or fails with BRIM_MULTIHOST_REQUIRED=1 (brimtest.main()).
Skip = bt.Skip


# ---- namespaces ----

_libc = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWNET = 0x40000000


def _setns(fd):
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "setns: %s" % os.strerror(e))


@contextlib.contextmanager
def in_netns(name):
    """Run the body with this thread in network namespace NAME (the
    other threads stay where they are); sockets made there stay there."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        there = os.open("/run/netns/" + name, os.O_RDONLY)
        try:
            _setns(there)
            try:
                yield
            finally:
                _setns(home)
        finally:
            os.close(there)
    finally:
        os.close(home)


class Addr(collections.namedtuple("Addr", "ns host port")):
    """HOST:PORT as seen from inside namespace NS."""

    def __str__(self):
        return "%s:%d (from %s)" % (self.host, self.port, self.ns)


def connect(where, timeout):
    """A TCP socket to WHERE (an Addr), made inside its namespace."""
    with in_netns(where.ns):
        return socket.create_connection((where.host, where.port),
                                        timeout=timeout)


class HostConn(bw.Conn):
    """brimwire.Conn that also takes an Addr for the port."""

    def __init__(self, where, timeout=5.0, do_hello=True,
                 role=bw.ROLE_CLIENT):
        if not isinstance(where, Addr):
            super().__init__(where, timeout, do_hello, role)
            return
        self.sock = connect(where, timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = bytearray()
        if do_hello:
            rep = self.call("HELLO", 1, 1, 0, role, 0)
            if rep[0] != 0:
                raise AssertionError("HELLO refused: %r" % (rep,))


# migrate_basic and fault_kill reach brimwire through their global "bw".
_bw_view = types.ModuleType("brimwire_multihost")
_bw_view.__dict__.update(bw.__dict__)
_bw_view.Conn = HostConn
mb.bw = fk.bw = _bw_view


def wait_listening(where, proc, timeout=10.0):
    """Until WHERE accepts a connection; fails if PROC exits first."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.proc.poll() is not None:
            raise AssertionError("%s exited (%r):\n%s" % (
                proc.cmd, proc.proc.returncode, proc.output()[-3000:]))
        try:
            connect(where, 1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, \
                "%s: nothing listens on %s after %.0f s" % (
                    proc.cmd, where, timeout)
            time.sleep(0.05)


class Hosts:
    """netns.sh up N under PREFIX, after a down that clears whatever a
    crashed run of the same prefix left; close() takes it all down."""

    def __init__(self, prefix, n):
        self.prefix = prefix
        self.n = n
        self.sh("down")
        try:
            self.sh("up", str(n))
        except BaseException:
            self.close()
            raise

    def sh(self, *args):
        cmd = [NETNS_SH, "--prefix", self.prefix] + list(args)
        r = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=120)
        out = r.stdout.decode(errors="replace").rstrip()
        if r.returncode == SKIP:
            raise Skip(out)
        # Only the script's summary lines: the "+ ip ..." ones are noise.
        print("\n".join(line for line in out.splitlines()
                        if line.startswith("netns.sh")), flush=True)
        assert r.returncode == 0, "%s failed (%d):\n%s" % (
            " ".join(cmd), r.returncode, out)

    def ns(self, i):
        return "%sh%d" % (self.prefix, i)

    @staticmethod
    def ip(i):
        return "10.77.0.%d" % (10 + i)

    def cmd(self, i, argv):
        """ARGV run inside host I (the process keeps the PID)."""
        return [NETNS_SH, "--prefix", self.prefix, "exec", str(i)] + argv

    def cut(self, i):
        self.sh("cut", str(i))
        return time.monotonic()

    def heal(self, i):
        self.sh("heal", str(i))
        return time.monotonic()

    def close(self):
        self.sh("down")


# ---- the cluster over the hosts ----

class HostCluster(fk.FaultCluster):
    """fault_kill's cluster with brim-coord in host 0 and each node in a
    host of its own; the test talks to them from host 0 through the
    bridge. cl.nodes[NAME].port is an Addr, so the inherited helpers
    (fetch, conn, stats, wait_*, kill, close) work unchanged."""

    def __init__(self, bindir, hosts):
        # Not FaultCluster.__init__: it starts brim-coord on loopback.
        bindir = os.path.abspath(bindir)
        self.bindir = bindir
        self.hosts = hosts
        self.dir = tempfile.mkdtemp(prefix="brim-multihost-")
        self.env = dict(os.environ)
        self.nodes, self.conns, self.dead = {}, {}, {}
        self.old_coords, self.cleanups = [], []
        self.bench_bin = os.path.join(bindir, "brim-bench")
        self.coord_addr = "%s:%d" % (hosts.ip(0), COORD_PORT)
        self.cport = self.client(0, COORD_PORT)
        self.coord = mb.Proc(hosts.cmd(0, [
            os.path.join(bindir, "brim-coord"), "--listen", self.coord_addr,
            "--data-dir", self.dir, "--partitions", str(P),
            "--dead-after-ms", str(DEAD_AFTER_MS)]),
            os.path.join(self.dir, "coord.log"))
        try:
            wait_listening(self.cport, self.coord)
        except BaseException:
            self.close()
            raise

    def client(self, i, port):
        """Host I's PORT as a client in host 0 sees it."""
        return Addr(self.hosts.ns(0), self.hosts.ip(i), port)

    def inside(self, i):
        """Host I's node port as a client inside host I sees it: reachable
        while host I is cut off."""
        return Addr(self.hosts.ns(i), self.hosts.ip(i), NODE_PORT)

    def add(self, name, host=None, coordinator=None):
        """Start node NAME in HOST (default: the digits of NAME), joining
        COORDINATOR (default brim-coord in host 0)."""
        host = int(name[len("node"):]) if host is None else host
        n = mb.Proc(self.hosts.cmd(host, [
            os.path.join(self.bindir, "brim-node"), "--name", name,
            "--coordinator", coordinator or self.coord_addr, "--listen",
            "%s:%d" % (self.hosts.ip(host), NODE_PORT), "--partitions",
            str(P)]), os.path.join(self.dir, name + ".log"), env=self.env)
        n.host = host
        n.port = self.client(host, NODE_PORT)
        self.nodes[name] = n
        wait_listening(n.port, n)

    def relay(self, host, listen_port, target, delay_ms):
        """A delay_relay.py in HOST on its LISTEN_PORT to TARGET
        ("host:port"), stopped by PID with the cluster. Returns it, with
        .addr (from host 0) and .ctl(words...)."""
        name = "relay%d-%d" % (host, listen_port)
        sock = os.path.join(self.dir, name + ".sock")
        r = mb.Proc(self.hosts.cmd(host, [
            sys.executable, RELAY_PY, "--listen",
            "%s:%d" % (self.hosts.ip(host), listen_port), "--target", target,
            "--delay-ms", str(delay_ms), "--control", sock]),
            os.path.join(self.dir, name + ".log"))
        self.cleanups.append(r.stop)
        r.addr = self.client(host, listen_port)
        r.ctl = lambda *words: relay_ctl(sock, words)
        wait_listening(r.addr, r)
        return r

    def forget(self, name):
        """Drop the cached connection to NAME (after a cut it is dead)."""
        c = self.conns.pop(name, None)
        if c is not None:
            c.close()


def relay_ctl(sock, words):
    """One control command to the relay at SOCK: its reply's fields."""
    out = delay_relay.ctl(sock, [str(w) for w in words])
    assert out.startswith("ok"), (words, out)
    return dict(kv.split("=", 1) for kv in out.split()[1:])


def run_case(bindir, prefix, body, coordinators=None):
    """Four hosts under PREFIX; a HostCluster with node1..node3 in hosts
    1..3 (COORDINATORS(cl), if given, returns {name: coordinator address}
    for nodes that must not use brim-coord's own) and its first epoch;
    BODY(cl, t1); every process and namespace removed after, also on a
    failure."""
    hosts = Hosts(prefix, 4)
    try:
        cl = HostCluster(bindir, hosts)
        with cl:
            via = coordinators(cl) if coordinators else {}
            for i in (1, 2, 3):
                cl.add("node%d" % i, coordinator=via.get("node%d" % i))
            body(cl, cl.wait_members(3))
    finally:
        hosts.close()


# ---- shared steps ----

def set_at(cl, t, vals, settle_s=8.0):
    """SET every key of VALS at its owner in T; RETRY and MOVED (an owner
    that has not committed T, or is not serving it yet) are asked again
    for up to SETTLE_S."""
    for name, ks in fk.by_owner(t, list(vals)).items():
        reps = fk.pipeline(cl.conn(name),
                           [("SET", k, vals[k], 0, 0) for k in ks])
        for k, rep in zip(ks, reps):
            deadline = time.monotonic() + settle_s
            while rep[0] in (bw.ST["MOVED"], bw.ST["RETRY"]):
                assert time.monotonic() < deadline, (name, k, rep)
                time.sleep(0.05)
                rep = cl.conn(name).call("SET", 9, k, vals[k], 0, 0)
            assert rep[0] == 0, ("SET at %s" % name, k, rep)


def keys_of(t, name, prefix, n):
    """N keys PREFIX-<i> whose partition NAME owns in T."""
    own = owners(t)
    out = []
    i = 0
    while len(out) < n:
        k = b"%s-%d" % (prefix, i)
        if own[part(t, k)] == name:
            out.append(k)
        i += 1
    return out


def rewrite(cl, t, keys, tag):
    """Give half of KEYS (the old node's keys, now elsewhere in T) new
    values at their owners in T; returns {key: what a read may return}:
    the new value, or None (a miss only: the key died with its node)."""
    now = {k: None for k in keys}
    fresh = {k: b"%s-%d-after" % (tag, i) for i, k in enumerate(keys)
             if i % 2 == 0}
    set_at(cl, t, fresh)
    now.update(fresh)
    return now


def load_victim(cl, t1, victim, n=3000):
    """Load N keys at their owners in T1; returns ({key: value}, the keys
    VICTIM owns)."""
    want = fk.load(cl, t1, n)
    return want, fk.by_owner(t1, list(want))[victim]


def wait_return(cl, name, t_without, timeout=30.0):
    """After a heal or SIGCONT: until node NAME has exited, or is a member
    of a committed epoch after T_WITHOUT that it has committed too.
    Returns ("exited", exit code, seconds) or ("rejoined", topology,
    seconds)."""
    start = time.monotonic()
    deadline = start + timeout
    node = cl.nodes[name]
    why = "no answer yet"
    while True:
        rc = node.proc.poll()
        if rc is not None:
            cl.forget(name)
            cl.dead[name] = cl.nodes.pop(name)
            return "exited", rc, time.monotonic() - start
        t = cl.fetch()
        if t["epoch"] > t_without["epoch"] and name in names(t):
            try:
                e = cl.node_epoch(name)
            except (OSError, bw.Closed, AssertionError) as ex:
                cl.forget(name)
                e = "unreachable (%s)" % ex
            if e == t["epoch"]:
                return "rejoined", t, time.monotonic() - start
            why = "member of epoch %d, the node is at %r" % (t["epoch"], e)
        else:
            why = "coordinator at epoch %d, members %r" % (t["epoch"],
                                                         names(t))
        assert time.monotonic() < deadline, \
            "%s neither exited nor rejoined within %.0f s: %s" % (
                name, timeout, why)
        time.sleep(0.2)


def check_returned(cl, name, outcome, want_now):
    """NAME came back (wait_return's OUTCOME); WANT_NOW: its old keys ->
    the only value a read may return (None: a miss only). Direct reads at
    NAME (if it runs) and routed reads of every such key must never give
    another value. Prints what happened."""
    how, info, secs = outcome
    keys = list(want_now)
    t, st = cl.wait_converged(20.0)
    if how == "exited":
        lines = cl.dead[name].output().strip().splitlines()
        why = [x for x in lines if " E " in x or " W " in x] or lines
        print("%s exited with code %r %.1f s after it came back; its last "
              "warning: %s" % (name, info, secs, why[-1]))
    else:
        direct = fk.pipeline(cl.conn(name), [("GET", k) for k in keys])
        stale = [(k, r[2][:24]) for k, r in zip(keys, direct)
                 if r[0] == 0 and r[2] != want_now[k]]
        counts = collections.Counter(status_name(r[0]) for r in direct)
        print("%s rejoined %.1f s after it came back: epoch %d, STATS keys "
              "%d; direct reads of its %d old keys: %s" % (
                  name, secs, t["epoch"], st[name]["keys"], len(keys),
                  dict(counts)))
        assert not stale, "%s served %d old values after it came back, " \
            "first %r" % (name, len(stale), stale[:5])
    got = fk.read_at(cl, t, keys)
    want = {k: v if v is not None else b"<a miss: lost with its node>"
            for k, v in want_now.items()}
    hits, misses = fk.check_reads(got, want, set(keys),
                                  "old keys of %s, routed by epoch %d"
                                  % (name, t["epoch"]))
    print("routed reads of %s's old keys at epoch %d: %d hits (all values "
          "written after it was removed), %d misses" % (name, t["epoch"],
                                                      hits, misses))


class Prober(threading.Thread):
    """A client inside host HOST talking to the node at ADDR directly:
    GET of KEYS round robin, every fourth request a SET of one of
    SET_KEYS, one at a time. Records (time sent, op, key, status or
    error name, value) for every request."""

    def __init__(self, addr, keys, set_keys):
        super().__init__(daemon=True)
        self.addr, self.keys, self.set_keys = addr, keys, set_keys
        self.log = []
        self.halt = threading.Event()

    def run(self):
        conn = None
        i = 0
        while not self.halt.is_set():
            i += 1
            if i % 4 == 0:
                k = self.set_keys[i % len(self.set_keys)]
                req = ("SET", k, b"probe-%d" % i, 0, 0)
            else:
                k = self.keys[i % len(self.keys)]
                req = ("GET", k)
            at = time.monotonic()
            try:
                if conn is None:
                    conn = HostConn(self.addr, timeout=2.0)
                rep = conn.call(req[0], 100 + i, *req[1:])
                self.log.append((at, req[0], k, rep[0],
                                 rep[2] if rep[0] == 0 and req[0] == "GET"
                                 else None))
            except (OSError, bw.Closed, AssertionError) as e:
                self.log.append((at, req[0], k, type(e).__name__, None))
                if conn is not None:
                    conn.close()
                conn = None
                time.sleep(0.05)
            time.sleep(0.01)
        if conn is not None:
            conn.close()

    def stop(self):
        self.halt.set()
        self.join(timeout=15)
        assert not self.is_alive(), "the prober did not stop"

    def between(self, t0, t1):
        return [r for r in self.log if t0 <= r[0] < t1]


def status_name(st):
    """A wire status by name; an exception's name as it is."""
    return bw.ST_NAME.get(st, st) if isinstance(st, int) else st


def tally(rows):
    """Prober rows counted by outcome."""
    return dict(collections.Counter(status_name(r[3]) for r in rows))


# ---- cases ----

@case
def partition_node(bindir):
    """Host 2 cut off for dead-after + 3 s, then healed."""
    victim = "node2"

    def body(cl, t1):
        want = fk.load(cl, t1, 6000)
        groups = fk.by_owner(t1, list(want))
        survivors = {n: (cl.nodes[n].port, ks) for n, ks in groups.items()
                     if n != victim}
        reader = fk.Reader(survivors, want)
        reader.start()
        cl.cleanups.append(reader.halt.set)
        time.sleep(1.0)
        reads_before = reader.reads
        cut_at = cl.hosts.cut(2)
        cl.forget(victim)
        t2 = cl.wait_epoch_without(victim, t1["epoch"],
                                   DEAD_AFTER_MS / 1000.0 + 5)
        new_ms = (time.monotonic() - cut_at) * 1000
        print("partition_node: host 2 cut; epoch %d without %s committed "
              "%.0f ms after the cut (bound %d ms)" % (
                  t2["epoch"], victim, new_ms, DEAD_AFTER_MS + 1000),
              flush=True)
        assert new_ms <= DEAD_AFTER_MS + 1000, new_ms
        o1, o2 = owners(t1), owners(t2)
        live = set(cl.nodes) - {victim}
        orphans = [p for p in range(P) if o2[p] not in live]
        assert not orphans, "partitions without a live owner: %r" \
            % orphans[:10]
        moved = [p for p in range(P) if o1[p] != victim and o1[p] != o2[p]]
        assert not moved, "partitions of survivors moved: %r" % moved[:10]
        lost = groups[victim]
        want_now = rewrite(cl, t2, lost, b"partition")
        time.sleep(max(0.0, cut_at + DEAD_AFTER_MS / 1000.0 + 3
                       - time.monotonic()))
        reader.stop()
        print("partition_node: reader %d reads on node1 and node3 (%d "
              "during the cut), %d failed" % (
                  reader.reads, reader.reads - reads_before,
                  len(reader.fails)))
        assert reader.reads > reads_before and not reader.fails, \
            reader.fails[:5]
        cl.hosts.heal(2)
        outcome = wait_return(cl, victim, t2)
        check_returned(cl, victim, outcome, want_now)

    run_case(bindir, "bmpart", body)


@case
def lease_stops_serving(bindir):
    """Host 2 cut off; a client inside host 2 asks node2 directly."""
    victim = "node2"

    def body(cl, t1):
        _, mine = load_victim(cl, t1, victim)
        probe = Prober(cl.inside(2), mine,
                       keys_of(t1, victim, b"lease-probe", 8))
        probe.start()
        cl.cleanups.append(probe.halt.set)
        time.sleep(1.0)
        cut_at = cl.hosts.cut(2)
        cl.forget(victim)
        t2 = cl.wait_epoch_without(victim, t1["epoch"],
                                   DEAD_AFTER_MS / 1000.0 + 5)
        want_now = rewrite(cl, t2, mine, b"lease")
        time.sleep(max(0.0, cut_at + DEAD_AFTER_MS / 1000.0 + 1
                       - time.monotonic()))
        heal_at = cl.hosts.heal(2)
        outcome = wait_return(cl, victim, t2)
        time.sleep(0.5)
        probe.stop()
        expiry = cut_at + (LEASE_MS + LEASE_GRACE_MS) / 1000.0
        before = probe.between(0, cut_at)
        leased = probe.between(cut_at, expiry)
        after = probe.between(expiry, heal_at)
        back = probe.between(heal_at, float("inf"))
        served = [r for r in after if r[3] == 0]
        print("lease_stops_serving: node2's replies to a client in host 2: "
              "before the cut %r; first %d ms of the cut %r; from %d ms "
              "after the cut (lease %d ms + %d) to the heal %r; after the "
              "heal %r" % (tally(before), LEASE_MS + LEASE_GRACE_MS,
                           tally(leased), LEASE_MS + LEASE_GRACE_MS,
                           LEASE_MS, LEASE_GRACE_MS, tally(after),
                           tally(back)))
        oks = [r for r in leased + after if r[3] == 0]
        refused = [r for r in leased + after if r[3] != 0]
        print("lease_stops_serving: last success sent %s ms after the cut, "
              "first refusal %s ms (%s)" % (
                  "%.0f" % ((oks[-1][0] - cut_at) * 1000) if oks else "-",
                  "%.0f" % ((refused[0][0] - cut_at) * 1000)
                  if refused else "-",
                  status_name(refused[0][3]) if refused else "-"))
        assert any(r[3] == 0 for r in before), \
            "the prober never got an answer before the cut: %r" % before[-5:]
        assert after, "no request in the lease-expired window"
        assert not served, "node2 served %d of %d requests after its " \
            "lease ran out (%d ms after the cut): first %r" % (
                len(served), len(after), LEASE_MS + LEASE_GRACE_MS,
                served[0][1:4])
        assert any(isinstance(r[3], int) for r in after), \
            "node2 answered nothing once its lease ran out (it should " \
            "answer an error such as RETRY): %r" % tally(after)
        stale = [r for r in back if r[1] == "GET" and r[3] == 0
                 and r[4] != want_now[r[2]]]
        assert not stale, "node2 served %d old values after the heal: %r" \
            % (len(stale), stale[:3])
        check_returned(cl, victim, outcome, want_now)

    run_case(bindir, "bmlease", body)


@case
def lease_after_pause(bindir):
    """node2 SIGSTOPped for dead-after + 1 s with requests waiting."""
    victim = "node2"

    def body(cl, t1):
        _, mine = load_victim(cl, t1, victim)
        conn = HostConn(cl.inside(2), timeout=10)
        cl.cleanups.append(conn.close)
        reps = fk.pipeline(conn, [("GET", k) for k in mine[:50]])
        assert all(r[0] == 0 for r in reps), "node2 before the pause"
        node = cl.nodes[victim]
        os.kill(node.pid, signal.SIGSTOP)
        cl.cleanups.insert(0, lambda: node.proc.poll() is None
                           and os.kill(node.pid, signal.SIGCONT))
        stop_at = time.monotonic()
        t2 = cl.wait_epoch_without(victim, t1["epoch"],
                                   DEAD_AFTER_MS / 1000.0 + 5)
        print("lease_after_pause: epoch %d without node2 %.0f ms after "
              "SIGSTOP" % (t2["epoch"], (time.monotonic() - stop_at) * 1000))
        want_now = rewrite(cl, t2, mine, b"pause")
        time.sleep(max(0.0, stop_at + DEAD_AFTER_MS / 1000.0 + 1
                       - time.monotonic()))
        # Requests that wait in the socket for the node to wake.
        sets = keys_of(t1, victim, b"pause-probe", 8)
        reqs = [("GET", k) for k in mine[:200]] + \
            [("SET", k, b"while-paused", 0, 0) for k in sets]
        conn.send(b"".join(bw.req(r[0], 5000 + i, *r[1:])
                           for i, r in enumerate(reqs)))
        os.kill(node.pid, signal.SIGCONT)
        got = []
        try:
            for _ in reqs:
                got.append(conn.reply(timeout=10))
        except (OSError, bw.Closed) as e:
            print("lease_after_pause: connection ended after %d replies: "
                  "%s" % (len(got), e))
        served = [(r[0], req[:2]) for req, r in zip(reqs, got) if r[0] == 0]
        print("lease_after_pause: %d requests waiting across the pause "
              "(%.1f s): %d replies %r" % (
                  len(reqs), DEAD_AFTER_MS / 1000.0 + 1, len(got),
                  dict(collections.Counter(status_name(r[0])
                                           for r in got))))
        assert not served, "node2 served %d of the %d requests that " \
            "waited for it after its lease ran out: first %r" % (
                len(served), len(reqs), served[:3])
        outcome = wait_return(cl, victim, t2)
        check_returned(cl, victim, outcome, want_now)

    run_case(bindir, "bmpause", body)


@case
def slow_node(bindir):
    """node3's client port and coordinator link 100 ms each way."""
    delay_ms = 100
    relays = {}

    def coordinators(cl):
        # In host 3, in front of brim-coord: node3's JOIN and heartbeats.
        relays["coord"] = cl.relay(3, RELAY_PORT, cl.coord_addr, delay_ms)
        return {"node3": "%s:%d" % (cl.hosts.ip(3), RELAY_PORT)}

    def body(cl, t1):
        relay_c = cl.relay(0, RELAY_PORT, "%s:%d" % (cl.hosts.ip(3),
                                                     NODE_PORT), delay_ms)
        want = fk.load(cl, t1, 3000)
        keys3 = fk.by_owner(t1, list(want))["node3"]
        fresh = {k: b"slow-%d" % i for i, k in enumerate(keys3[:100])}
        # Direct readers of every node, on the keys not rewritten below.
        steady = {k: v for k, v in want.items() if k not in fresh}
        readers = fk.Reader({n: (cl.nodes[n].port, ks) for n, ks in
                             fk.by_owner(t1, list(steady)).items()}, steady)
        readers.start()
        cl.cleanups.append(readers.halt.set)
        start = time.monotonic()
        slow = HostConn(relay_c.addr, timeout=10)
        cl.cleanups.append(slow.close)

        def rtt(k):
            t = time.monotonic()
            rep = slow.call("GET", 77, k)
            ms = (time.monotonic() - t) * 1000
            assert rep[0] == 0 and rep[2] == want[k], (k, rep)
            return ms

        one = [rtt(k) for k in keys3[:5]]
        reps = fk.pipeline(slow, [("GET", k) for k in keys3])
        fk.check_reads(dict(zip(keys3, reps)), want, set(),
                       "GET through the relay")
        want.update(fresh)
        reps = fk.pipeline(slow, [("SET", k, v, 0, 0)
                                  for k, v in fresh.items()])
        assert all(r[0] == 0 for r in reps), reps[:3]
        fk.check_reads(fk.read_at(cl, t1, list(fresh)), want, set(),
                       "SET through the relay, read directly")
        relay_c.ctl("delay", 0)
        fast = [rtt(k) for k in keys3[:5]]
        relay_c.ctl("delay", 250)
        slower = [rtt(k) for k in keys3[:5]]
        relay_c.ctl("delay", delay_ms)
        print("slow_node: GET round trips through the relay at %d ms: "
              "%s ms; at 0 ms: %s ms; at 250 ms: %s ms; %d pipelined GETs "
              "and %d SETs exact" % (
                  delay_ms, " ".join("%.0f" % x for x in one),
                  " ".join("%.1f" % x for x in fast),
                  " ".join("%.0f" % x for x in slower), len(keys3),
                  len(fresh)), flush=True)
        assert min(one) >= 2 * delay_ms, one
        assert min(slower) >= 2 * 250, slower
        # Hold the slow path open for two dead-afters: nothing changes.
        while time.monotonic() < start + 2 * DEAD_AFTER_MS / 1000.0:
            rtt(keys3[0])
        readers.stop()
        t = cl.fetch()
        epochs = {n: cl.node_epoch(n) for n in cl.nodes}
        st = relay_c.ctl("status")
        hb = relays["coord"].ctl("status")
        print("slow_node: after %.1f s: coordinator epoch %d (first %d), "
              "members %r, node epochs %r; direct readers %d reads, %d "
              "failed; client relay %r; coordinator relay %r" % (
                  time.monotonic() - start, t["epoch"], t1["epoch"],
                  names(t), epochs, readers.reads, len(readers.fails), st,
                  hb))
        assert t["epoch"] == t1["epoch"], "the epoch moved: %d -> %d" % (
            t1["epoch"], t["epoch"])
        assert set(epochs.values()) == {t1["epoch"]}, epochs
        assert readers.reads > 0 and not readers.fails, readers.fails[:5]
        for r in (st, hb):
            assert int(r["up_bytes"]) > 0 and int(r["down_bytes"]) > 0, r
        deaths = [line for line in cl.coord.output().splitlines()
                  if ": dead" in line]
        assert not deaths, "the coordinator declared: %r" % deaths

    run_case(bindir, "bmslow", body, coordinators)


def main():
    return mb.main(CASES, required_env="BRIM_MULTIHOST_REQUIRED")


if __name__ == "__main__":
    sys.exit(main())
