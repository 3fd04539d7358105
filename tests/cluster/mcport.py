#!/usr/bin/env python3
"""mcport.py - brim-node's memcached port (issue 14; DESIGN.md 10,
docs/memcached.md) against real clients and raw sockets (CTest
mcport.<case>).

Cases start every process they need on free loopback ports (34000-34999,
or ones the OS gives), stop them by PID in a finally block, and bound
every loop in count and time. A cluster is deploy/brim-cluster's: one
brim-coord and N brim-nodes, each with a memcached port (DIR/memcached).

Usage: mcport.py --bin BUILD/bin --cluster deploy/brim-cluster CASE
       mcport.py --list
"""

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "support"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import brimtest as bt  # noqa: E402
import brimwire as bw  # noqa: E402
import ports  # noqa: E402
import bench_cluster  # noqa: E402
import migrate_basic as mb  # noqa: E402

CASES = bt.Cases()
case = CASES


def check(cond, msg, *args):
    if not cond:
        raise AssertionError(msg % args if args else msg)


def free_ports(n, also=None):
    """A base of N consecutive free ports (and the N from BASE + ALSO),
    below the ephemeral range (ports.py)."""
    return ports.free_base(n, also=() if also is None else (also,))


class Standalone:
    """brim-node --standalone with a memcached port, stopped by PID."""

    def __init__(self, args, *extra):
        self.port, self.mport = bw.free_port(), bw.free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="mcport-", suffix=".log",
                                               delete=False)
        cmd = [os.path.join(args.bin, "brim-node"), "--standalone",
               "--listen", "127.0.0.1:%d" % self.port,
               "--memcached-listen", "127.0.0.1:%d" % self.mport] + list(extra)
        self.proc = subprocess.Popen(cmd, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        wait_listen(self.mport, self.proc)

    def output(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        rc = self.proc.returncode
        out = self.output()
        os.unlink(self.log.name)
        check(rc == 0, "brim-node exited %r:\n%s", rc, out[-3000:])


def wait_listen(port, proc=None, bound_s=15.0):
    deadline = time.monotonic() + bound_s
    while True:
        if proc is not None and proc.poll() is not None:
            raise AssertionError("process exited at start (%d)"
                                 % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            check(time.monotonic() < deadline, "port %d not listening in "
                  "%.0f s", port, bound_s)
            time.sleep(0.05)


class MCluster(mb.Cluster):
    """migrate_basic's cluster (brim-coord and brim-nodes on ports the OS
    gives), every node with a memcached port (n.mport)."""

    def __init__(self, args, node_args=(), delay_ms=0):
        super().__init__(args.bin, delay_ms=delay_ms)
        self.node_args = list(node_args)

    def add(self, name, env=None):
        port, mport = bw.free_port(), bw.free_port()
        n = mb.Proc([os.path.join(self.bindir, "brim-node"), "--name", name,
                     "--coordinator", "127.0.0.1:%d" % self.cport,
                     "--listen", "127.0.0.1:%d" % port, "--partitions",
                     str(mb.P), "--memcached-listen", "127.0.0.1:%d" % mport]
                    + self.node_args,
                    os.path.join(self.dir, name + ".log"),
                    env=self.env if env is None else env)
        n.port, n.mport = port, mport
        self.nodes[name] = n
        mb.wait_port(port, n)
        mb.wait_port(mport, n)

    def coord_addr(self):
        return "127.0.0.1:%d" % self.cport

    def libbrim_dump(self, keys):
        """{key: (flags, value)} as libbrim reads them (None: a miss)."""
        p = subprocess.run([self.tool, self.coord_addr(), "dump"],
                           input="".join(k + "\n" for k in keys),
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, "client_coord_tool dump exited %d: %s",
              p.returncode, p.stderr[-2000:])
        out = {}
        for line in p.stdout.splitlines():
            f = line.split(" ")
            if len(f) == 2 and f[1] == "miss":
                out[f[0]] = None
            elif len(f) == 3:
                out[f[0]] = (int(f[1]), bytes.fromhex(f[2]))
        return out


def cluster_up(args, n=3, node_args=(), delay_ms=0, env=None):
    cl = MCluster(args, node_args, delay_ms)
    cl.tool = args.tool
    try:
        for i in range(1, n + 1):
            cl.add("node%d" % i, env)
        cl.wait_members(n)
    except BaseException:
        cl.dump()
        cl.close()
        raise
    return cl


@contextlib.contextmanager
def cluster(args, n=3, node_args=(), delay_ms=0, env=None):
    """cluster_up() for a with block: the logs shown if it fails, every
    process stopped at its end."""
    cl = cluster_up(args, n, node_args, delay_ms, env)
    try:
        yield cl
    except BaseException:
        cl.dump()
        raise
    finally:
        cl.close()


def brim_cluster(args, *cmd, env=None, timeout=120):
    """deploy/brim-cluster CMD; its output."""
    full = [args.cluster] + list(cmd)
    print("$ " + " ".join(full), flush=True)
    p = subprocess.run(full, env=env, capture_output=True, text=True,
                       timeout=timeout)
    sys.stdout.write(p.stdout + p.stderr)
    check(p.returncode == 0, "%s exited %d", " ".join(cmd), p.returncode)
    return p.stdout


def memccapable(port):
    p = subprocess.run(["memccapable", "-h", "127.0.0.1", "-p", str(port),
                        "-a"], capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    sys.stdout.write(out)
    passed = out.count("[pass]")
    failed = [ln for ln in out.splitlines()
              if "[" in ln and "[pass]" not in ln and "[skip]" not in ln]
    print("memccapable -a on port %d: %d passed, %d failed, exit %d"
          % (port, passed, len(failed), p.returncode))
    check(p.returncode == 0 and not failed and passed >= 20,
          "memccapable failed: %r", failed)


@case
def memccapable_standalone(args):
    n = Standalone(args, "--memcached-allow-flush")
    try:
        memccapable(n.mport)
    finally:
        n.stop()


@case
def memccapable_cluster(args):
    """memccapable -a through one node's port of a 3-node cluster that
    deploy/brim-cluster started (its memcached ports printed and listed)."""
    d = tempfile.mkdtemp(prefix="mcport.")
    env = dict(os.environ, BRIM_BIN=args.bin, BRIM_CLUSTER_MC_OFFSET="500",
               BRIM_NODE_ARGS="--memcached-allow-flush")
    try:
        base = free_ports(4, also=500)
        out = brim_cluster(args, "up", "--nodes", "3", "--base-port",
                           str(base), "--dir", d, env=env)
        with open(os.path.join(d, "memcached")) as f:
            ports = {ln.split()[0]: int(ln.split()[1].rsplit(":", 1)[1])
                     for ln in f}
        check(len(ports) == 3 and "127.0.0.1:%d" % ports["node2"] in out,
              "brim-cluster up did not print the memcached ports")
        memccapable(ports["node2"])
    finally:
        subprocess.run([args.cluster, "down", "--dir", d], env=env,
                       capture_output=True, timeout=60)
        shutil.rmtree(d, ignore_errors=True)


def need_pymemcache():
    """pymemcache, Debian's python3-pymemcache (it belongs to
    /usr/bin/python3: the case runs again under it when this Python lacks
    it)."""
    try:
        import pymemcache  # noqa: F401
    except ImportError:
        if sys.executable != "/usr/bin/python3" \
                and os.path.exists("/usr/bin/python3"):
            os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
        raise bt.Skip("no pymemcache (apt-get install python3-pymemcache)")


VALUE_MAX = 1048576  # brim-node's default --max-value-bytes


@case
def pymemcache_cluster(args):
    """An existing client (pymemcache) through one node's port of a 3-node
    cluster; what it wrote read back through libbrim, flags included."""
    need_pymemcache()
    from pymemcache.client.base import Client
    from pymemcache.exceptions import MemcacheServerError
    with cluster(args) as cl:
        t = cl.fetch()
        c = Client(("127.0.0.1", cl.nodes["node2"].mport), connect_timeout=5,
                   timeout=10)
        keys = ["k%04d" % i for i in range(1000)]
        owners = {mb.owner_name(t, k.encode()) for k in keys}
        check(owners == {"node1", "node2", "node3"}, "keys not spread: %r",
              owners)
        data = {k: ("v-%s-" % k).encode() * (1 + int(k[1:]) % 7)
                for k in keys}
        failed = c.set_many(data, noreply=False)
        check(failed == [], "set_many failed for %r", failed[:5])
        sent0 = int(c.stats("cluster")[b"forward_sent"])
        got = c.get_many(keys)
        check(got == data, "get_many: %d of %d keys differ",
              sum(1 for k in keys if got.get(k) != data[k]), len(keys))
        sent = int(c.stats("cluster")[b"forward_sent"]) - sent0
        check(sent <= 4, "get_many of 1000 keys sent %d forwards, not one "
              "MGET per other owner", sent)
        # flags travel as brim's client flags.
        for i in range(20):
            check(c.set("f%d" % i, b"x%d" % i, flags=1000 + i, noreply=False),
                  "set with flags")
        # gets / cas with a conflict.
        c.set("casme", b"one", noreply=False)
        v, cas1 = c.gets("casme")
        check(v == b"one" and cas1, "gets: %r %r", v, cas1)
        check(c.cas("casme", b"two", cas1, noreply=False) is True,
              "cas with the current value refused")
        check(c.cas("casme", b"three", cas1, noreply=False) is False,
              "cas with a stale value accepted")
        check(c.cas("nosuch", b"x", cas1, noreply=False) is None,
              "cas on a missing key")
        check(c.get("casme") == b"two", "cas result")
        # incr / decr: memcached's wrap and floor.
        c.set("n", b"10", noreply=False)
        check(c.incr("n", 5, noreply=False) == 15, "incr")
        check(c.decr("n", 100, noreply=False) == 0, "decr floors at 0")
        c.set("n", b"18446744073709551615", noreply=False)
        check(c.incr("n", 2, noreply=False) == 1, "incr wraps at 2^64")
        check(c.incr("nosuch", 1, noreply=False) is None, "incr missing")
        # touch.
        check(c.touch("casme", 100, noreply=False) is True, "touch")
        check(c.touch("nosuch", 100, noreply=False) is False,
              "touch missing")
        # noreply pipelines: 300 sets, deletes, then one read behind them.
        for k in keys[:300]:
            c.set(k, b"nr-" + k.encode(), noreply=True)
        for k in keys[300:400]:
            c.delete(k, noreply=True)
        got = c.get_many(keys[:400])
        check(all(got.get(k) == b"nr-" + k.encode() for k in keys[:300])
              and not any(k in got for k in keys[300:400]),
              "a read overtook noreply writes before it")
        # the largest value and one byte over.
        big = bytes(random.getrandbits(8) for _ in range(256)) * \
            (VALUE_MAX // 256)
        check(len(big) == VALUE_MAX and c.set("big", big, noreply=False),
              "a value of %d bytes refused", VALUE_MAX)
        check(c.get("big") == big, "the largest value read back")
        try:
            c.set("big2", big + b"x", noreply=False)
            raise AssertionError("a value one byte over was stored")
        except MemcacheServerError as e:
            check("too large" in str(e), "one byte over: %r", e)
        check(c.get("big2") is None, "a refused value is there")
        c.close()
        # libbrim reads what pymemcache wrote.
        want = {k: (0, b"nr-" + k.encode()) for k in keys[:300]}
        want.update({k: None for k in keys[300:400]})
        want.update({k: (0, data[k]) for k in keys[400:]})
        want.update({"f%d" % i: (1000 + i, b"x%d" % i) for i in range(20)})
        want.update({"casme": (0, b"two"), "n": (0, b"1" + b" " * 19),  # padded, as memcached
                     "big": (0, big), "big2": None})
        got = cl.libbrim_dump(list(want))
        bad = [k for k in want if got.get(k, "absent") != want[k]]
        check(not bad, "libbrim reads %d keys otherwise, e.g. %r: %r, want "
              "%r", len(bad), bad[:1], got.get(bad[0]) if bad else None,
              want[bad[0]] if bad else None)
        print("pymemcache: 1000 keys over %d nodes, cas, incr/decr, touch, "
              "noreply, %d-byte value and one over; libbrim agrees on %d "
              "keys" % (len(owners), VALUE_MAX, len(want)))


class Raw:
    """A raw memcached connection: send bytes, read an exact reply."""

    def __init__(self, port, timeout=10.0):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.s.settimeout(timeout)
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def read_until(self, end, bound_s=10.0):
        """The bytes up to and including END (after what was read)."""
        deadline = time.monotonic() + bound_s
        while end not in self.buf:
            check(time.monotonic() < deadline, "no %r within %.0f s; have %r",
                  end, bound_s, self.buf[-300:])
            chunk = self.s.recv(65536)
            check(chunk, "connection closed; have %r", self.buf[-300:])
            self.buf += chunk
        i = self.buf.index(end) + len(end)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def ask(self, data, end=b"\r\n"):
        self.send(data)
        return self.read_until(end)

    def ask_va(self, data, bound_s=10.0):
        """One meta reply, with its value block after a VA line."""
        self.send(data)
        line = self.read_until(b"\r\n")
        if not line.startswith(b"VA "):
            return line
        n = int(line.split()[1]) + 2
        deadline = time.monotonic() + bound_s
        while len(self.buf) < n:
            check(time.monotonic() < deadline, "value of %r short", line)
            chunk = self.s.recv(65536)
            check(chunk, "connection closed in a value")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return line + out

    def close(self):
        self.s.close()


COUNTERS = ("cmd_get", "cmd_touch", "get_hits", "get_misses", "touch_hits",
            "touch_misses", "incr_hits", "incr_misses", "decr_hits",
            "decr_misses", "cmd_set", "delete_hits", "delete_misses")


def counters_after(port, cmds):
    """COUNTERS of the server on PORT after `stats reset` and CMDS (each
    answered before the next is sent; a meta command ends with mn)."""
    r = Raw(port)
    try:
        check(r.ask(b"set a 0 0 1\r\nx\r\nset s 0 0 3\r\nabc\r\n"
                    b"stats reset\r\n", b"RESET\r\n").endswith(b"RESET\r\n"),
              "stats reset on %d", port)
        for c in cmds:
            r.ask(c + b"mn\r\n", b"MN\r\n")
        text = r.ask(b"stats\r\n", b"END\r\n").decode()
    finally:
        r.close()
    got = {}
    for ln in text.split("\r\n"):
        f = ln.split()
        if len(f) == 3 and f[0] == "STAT" and f[1] in COUNTERS:
            got[f[1]] = int(f[2])
    return got


@case
def counters_vs_memcached(args):
    """The port's stats counters beside a real memcached's (Debian's
    1.6.18, -t 1) for the same commands on a fresh pair: a gat or an mg
    T hit counts as a touch, not a get; incr on a non-numeric value is
    neither a hit nor a miss (a fresh tester saw each differ)."""
    exe = shutil.which("memcached")
    if exe is None:
        raise bt.Skip("no memcached binary (Debian package memcached)")
    cases = [[b"gat 10 a zz\r\n"], [b"gats 10 a\r\n"], [b"mg a T30 v\r\n"],
             [b"mg zz T30 v\r\n"], [b"mg a v\r\n", b"mg zz v\r\n"],
             [b"get a zz\r\n"], [b"incr s 1\r\n", b"decr s 1\r\n"],
             [b"incr zz 1\r\n", b"decr zz 1\r\n"],
             [b"touch a 10\r\n", b"touch zz 10\r\n"],
             [b"ma s\r\n", b"ma zz\r\n"],
             [b"delete a\r\n", b"delete zz\r\n"]]
    mport = bw.free_port()
    mc = subprocess.Popen([exe, "-u", "nobody", "-p", str(mport), "-l",
                           "127.0.0.1", "-U", "0", "-t", "1"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    n = None
    try:
        wait_listen(mport, mc)
        n = Standalone(args)
        for cmds in cases:
            want = counters_after(mport, cmds)
            got = counters_after(n.mport, cmds)
            check(got == want, "counters after %r: brim %r, memcached %r",
                  cmds, {k: got.get(k) for k in got if got[k] != want.get(k)},
                  {k: want.get(k) for k in got if got[k] != want.get(k)})
        print("counters_vs_memcached: %d command sets, every counter of %d "
              "equal" % (len(cases), len(COUNTERS)), flush=True)
    finally:
        mc.kill()
        mc.wait(10)
        if n is not None:
            n.stop()


def key_per_owner(t, prefix, n=3):
    """{owner name: the first key PREFIX<i> it owns in topology T}, one for
    each of the N nodes."""
    keys = {}
    for i in range(2000):
        k = prefix + b"%d" % i
        keys.setdefault(mb.owner_name(t, k), k)
        if len(keys) == n:
            break
    check(len(keys) == n, "no key for every node: %r", keys)
    return keys


# Flags docs/memcached.md lists as not served, per command, and the line
# memcached 1.6.18 answers a flag it does not know with.
UNSUPPORTED = [(b"mg k h", b"CLIENT_ERROR invalid flag"),
               (b"mg k l", b"CLIENT_ERROR invalid flag"),
               (b"mg k R30", b"CLIENT_ERROR invalid flag"),
               (b"ms k 1 I\r\nx", b"CLIENT_ERROR invalid flag"),
               (b"md k I", b"CLIENT_ERROR invalid or duplicate flag"),
               (b"md k C5", b"CLIENT_ERROR invalid or duplicate flag"),
               (b"ma k C5", b"CLIENT_ERROR invalid or duplicate flag"),
               (b"mg k E5", b"CLIENT_ERROR invalid flag"),
               (b"ms k 1 E5\r\nx", b"CLIENT_ERROR invalid flag")]


@case
def meta_raw(args):
    """The meta protocol over a raw socket through one node of 3: keys of
    every node, quiet pipelines ended by mn, opaque tokens, mg's return
    flags on hits and misses, ms modes, ma with auto-create, md, and the
    unsupported flags answered as documented."""
    with cluster(args) as cl:
        t = cl.fetch()
        r = Raw(cl.nodes["node1"].mport)
        # One key owned by each node.
        keys = key_per_owner(t, b"m")
        for owner, k in sorted(keys.items()):
            what = "%s (owned by %s)" % (k.decode(), owner)
            # A miss: EN echoes O and k; quiet hides it.
            check(r.ask(b"mg %s v c f t s k Oo1\r\n" % k)
                  == b"EN k%s Oo1\r\n" % k, "mg miss of %s", what)
            # Quiet ms and mg pipelined, ended by mn: only the hits.
            r.send(b"ms %s 3 T100 F7 q Oa\r\nabc\r\n"
                   b"mg %s q v f t s k Ob\r\n"
                   b"mg %sx q v Oc\r\nmn\r\n" % (k, k, k))
            got = r.read_until(b"MN\r\n")
            check(got.startswith(b"VA 3 f7 t") and got.endswith(
                b" s3 k%s Ob\r\nabc\r\nMN\r\n" % k),
                "quiet pipeline of %s: %r", what, got)
            ttl = int(got.split(b" t")[1].split(b" ")[0])
            check(95 <= ttl <= 100, "t of %s is %d, set 100", what, ttl)
            # c on a hit and an ms with C: a conflict, then a match.
            cas = int(r.ask(b"mg %s c\r\n" % k).split(b"c")[1])
            check(r.ask(b"ms %s 1 C%d\r\nz\r\n" % (k, cas + 1))
                  == b"EX\r\n", "ms C mismatch of %s", what)
            got = r.ask(b"ms %s 1 C%d c Od\r\nz\r\n" % (k, cas))
            check(got.startswith(b"HD c") and got.endswith(b" Od\r\n")
                  and int(got[4:].split(b" ")[0]) != cas,
                  "ms C match of %s: %r", what, got)
            # ms modes.
            check(r.ask(b"ms %s 1 ME\r\ny\r\n" % k) == b"NS\r\n",
                  "add over %s", what)
            check(r.ask(b"ms %s 2 MA\r\nyy\r\n" % k) == b"HD\r\n",
                  "append %s", what)
            check(r.ask(b"ms %s 1 MP\r\nx\r\n" % k) == b"HD\r\n",
                  "prepend %s", what)
            check(r.ask_va(b"mg %s v\r\n" % k)
                  == b"VA 4\r\nxzyy\r\n", "after the modes of %s", what)
            check(r.ask(b"ms %sn 1 MR\r\nx\r\n" % k) == b"NS\r\n",
                  "replace missing %s", what)
            check(r.ask(b"ms %sn 1 ME\r\nx\r\n" % k) == b"HD\r\n",
                  "add missing %s", what)
            check(r.ask(b"ms %sn 1 MS T0\r\nw\r\n" % k) == b"HD\r\n",
                  "set %s", what)
            check(r.ask_va(b"mg %sn t v\r\n" % k)
                  == b"VA 1 t-1\r\nw\r\n", "t-1 of %s", what)
            # ma: a miss, auto-create with J, incr, decr to the floor.
            c = b"%sc" % k
            check(r.ask(b"ma %s\r\n" % c) == b"NF\r\n", "ma miss %s", what)
            check(r.ask_va(b"ma %s N0 J10 v\r\n" % c)
                  == b"VA 2\r\n10\r\n", "ma auto-create %s", what)
            check(r.ask_va(b"ma %s D5 v\r\n" % c)
                  == b"VA 2\r\n15\r\n", "ma incr %s", what)
            check(r.ask_va(b"ma %s MD D100 v t Oz\r\n" % c)
                  == b"VA 1 t-1 Oz\r\n0\r\n", "ma decr %s", what)
            check(r.ask(b"ma %s q\r\nmn\r\n" % c) == b"MN\r\n",
                  "quiet ma %s", what)
            # ma T sets the TTL on success, as memcached 1.6.18 does (a
            # fresh tester found it ignored); T0 clears it, T-1 expires.
            check(r.ask_va(b"ma %s T100 t v\r\n" % c)
                  == b"VA 1 t100\r\n2\r\n", "ma T100 %s", what)
            got = r.ask(b"mg %s t\r\n" % c)
            check(got in (b"HD t100\r\n", b"HD t99\r\n"),
                  "TTL after ma T100 %s: %r", what, got)
            check(r.ask_va(b"ma %s T0 v\r\n" % c) == b"VA 1\r\n3\r\n",
                  "ma T0 %s", what)
            check(r.ask(b"mg %s t\r\n" % c) == b"HD t-1\r\n",
                  "TTL after ma T0 %s", what)
            check(r.ask(b"ma %s T-1\r\n" % c) == b"HD\r\n",
                  "ma T-1 %s", what)
            check(r.ask(b"mg %s v\r\n" % c) == b"EN\r\n",
                  "after ma T-1 %s", what)
            check(r.ask_va(b"ma %sv N30 T50 t v\r\n" % c)
                  == b"VA 1 t50\r\n0\r\n", "ma N30 T50 %s", what)
            # incr reads the value as memcached does: " 12" is 12.
            check(r.ask(b"set %si 0 0 3\r\n 12\r\nincr %si 1\r\n" % (c, c),
                        b"13\r\n") == b"STORED\r\n13\r\n",
                  "incr of ' 12' %s", what)
            # A result no longer than the old value is padded with spaces
            # to its length, as memcached 1.6.18 rewrites it in place.
            check(r.ask(b"get %si\r\n" % c, b"END\r\n")
                  == b"VALUE %si 0 3\r\n13 \r\nEND\r\n" % c,
                  "value after incr of ' 12' %s", what)
            # gat and mg T with a TTL already past answer the hit, then
            # the item is gone (memcached 1.6.18's item_touch() order).
            g = b"%sg" % k
            check(r.ask(b"set %s 0 0 1\r\nx\r\ngat -1 %s\r\n" % (g, g),
                        b"END\r\n")
                  == b"STORED\r\nVALUE %s 0 1\r\nx\r\nEND\r\n" % g,
                  "gat -1 on a hit %s", what)
            check(r.ask(b"get %s\r\n" % g, b"END\r\n") == b"END\r\n",
                  "get after gat -1 %s", what)
            check(r.ask(b"set %s 0 0 1\r\ny\r\n" % g) == b"STORED\r\n",
                  "set %s", what)
            check(r.ask_va(b"mg %s v T-1\r\n" % g) == b"VA 1\r\ny\r\n",
                  "mg T-1 on a hit %s", what)
            check(r.ask(b"mg %s v\r\n" % g) == b"EN\r\n",
                  "mg after mg T-1 %s", what)
            g2 = b"%sh" % k
            check(r.ask(b"set %s 0 0 1\r\nz\r\nset %s 0 0 1\r\nw\r\n"
                        b"gat -1 %s %s\r\n" % (g, g2, g, g2), b"END\r\n")
                  == b"STORED\r\nSTORED\r\nVALUE %s 0 1\r\nz\r\n"
                  b"VALUE %s 0 1\r\nw\r\nEND\r\n" % (g, g2),
                  "multi-key gat -1 %s", what)
            check(r.ask(b"get %s %s\r\n" % (g, g2), b"END\r\n")
                  == b"END\r\n", "get after multi-key gat -1 %s", what)
            # mg N: a miss creates the item and says W.
            got = r.ask_va(b"mg %sv N30 v c t s\r\n" % k)
            check(got.startswith(b"VA 0 c") and got.endswith(
                b" t30 s0 W\r\n\r\n"), "mg N of %s: %r", what, got)
            # md, quiet and not.
            check(r.ask(b"md %s q\r\nmd %s Oe k\r\nmn\r\n" % (k, k),
                        b"MN\r\n") == b"NF Oe k%s\r\nMN\r\n" % k,
                  "md of %s", what)
            # me: EN for a miss.
            check(r.ask(b"me %s\r\n" % k) == b"EN\r\n", "me miss %s", what)
        for line, want in UNSUPPORTED:
            check(r.ask(line + b"\r\n") == want + b"\r\n",
                  "%r: want %r", line, want)
        # The text protocol on the same connection still answers.
        check(r.ask(b"version\r\n").startswith(b"VERSION "), "version")
        r.close()


@case
def insecure_refused(args):
    """With a client secret on the brim port, --memcached-listen on a
    non-loopback address is a usage error (exit 2, before anything opens),
    saying why, unless --memcached-insecure; loopback is always allowed;
    --memcached-insecure alone is a usage error too."""
    d = tempfile.mkdtemp(prefix="mcport.")
    try:
        for name in ("secret", "client-secret"):
            fd = os.open(os.path.join(d, name), os.O_WRONLY | os.O_CREAT,
                         0o600)
            os.write(fd, os.urandom(32))
            os.close(fd)
        base = [os.path.join(args.bin, "brim-node"), "--standalone",
                "--listen", "127.0.0.1:%d" % bw.free_port(), "--secret-file",
                os.path.join(d, "secret"), "--client-secret-file",
                os.path.join(d, "client-secret")]
        p = subprocess.run(base + ["--memcached-listen",
                                   "0.0.0.0:%d" % bw.free_port()],
                           capture_output=True, text=True, timeout=30)
        check(p.returncode == 2 and "no authentication" in p.stderr
              and "--memcached-insecure" in p.stderr,
              "a non-loopback port with a client secret: exit %d, %r",
              p.returncode, p.stderr[-500:])
        p = subprocess.run(base + ["--memcached-insecure"],
                           capture_output=True, text=True, timeout=30)
        check(p.returncode == 2 and "needs --memcached-listen" in p.stderr,
              "--memcached-insecure alone: exit %d, %r", p.returncode,
              p.stderr[-300:])
        for extra in (["--memcached-listen", "0.0.0.0:%d" % bw.free_port(),
                       "--memcached-insecure"],
                      ["--memcached-listen", "127.0.0.1:%d" % bw.free_port()]):
            n = subprocess.Popen(base + extra, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.STDOUT)
            try:
                port = int(extra[1].rsplit(":", 1)[1])
                wait_listen(port, n)
                r = Raw(port)
                check(r.ask(b"set k 0 0 1\r\nv\r\n") == b"STORED\r\n",
                      "the port serves with %r", extra)
                r.close()
            finally:
                n.send_signal(signal.SIGTERM)
                n.wait(15)
            check(n.returncode == 0, "exit %d with %r", n.returncode, extra)
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case
def owner_silent(args):
    """An owner that does not answer (SIGSTOP, each time shorter than the
    coordinator's 3 s dead-after): within the request timeout
    (--memcached-timeout-ms 400 here) the client gets SERVER_ERROR with the
    reason, for a get, a set and a multi-key get; a failed noreply set is
    counted (noreply_failed). Pipelined, commands on other keys run while
    the silent owner's get waits, a second get of that key waits for the
    first, and the replies come in request order."""
    with cluster(args, node_args=["--memcached-timeout-ms", "400"]) as cl:
        t = cl.fetch()
        key = {}
        for i in range(3000):
            k = b"s%d" % i
            key.setdefault(mb.owner_name(t, k), k)
        r = Raw(cl.nodes["node1"].mport)
        for k in key.values():
            check(r.ask(b"set %s 0 0 1\r\nx\r\n" % k) == b"STORED\r\n",
                  "set %s", k)
        k1, k2, k3 = key["node1"], key["node2"], key["node3"]
        silent = cl.nodes["node3"]
        os.kill(silent.pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            r.send(b"get %s\r\nget %s\r\nset %s 0 0 3\r\nnew\r\n"
                   b"get %s\r\nmn\r\n" % (k3, k1, k2, k3))
            other = Raw(cl.nodes["node2"].mport)
            seen, deadline = b"", time.monotonic() + 0.3
            while b"new" not in seen and time.monotonic() < deadline:
                seen = other.ask(b"get %s\r\n" % k2, b"END\r\n")
            check(b"new" in seen, "the set behind a waiting get did not "
                  "run at once: %r", seen)
            other.close()
            got = r.read_until(b"MN\r\n", bound_s=10)
            dt = time.monotonic() - t0
        finally:
            os.kill(silent.pid, signal.SIGCONT)
        parts = got.split(b"\r\n")
        check(len(parts) == 8 and parts[0].startswith(
                  b"SERVER_ERROR no answer from the key's owner")
              and b"400 ms" in parts[0]
              and parts[1:5] == [b"VALUE %s 0 1" % k1, b"x", b"END",
                                 b"STORED"]
              and parts[5].startswith(b"SERVER_ERROR ") and parts[6] == b"MN",
              "pipelined replies: %r", parts)
        check(0.75 <= dt <= 4.0, "the second get of a waiting key did not "
              "wait for the first, or took long: %.2f s", dt)
        time.sleep(1.0)  # heartbeats again
        os.kill(silent.pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            got = r.ask(b"get %s\r\n" % k3)
            dt = time.monotonic() - t0
            check(got.startswith(b"SERVER_ERROR no answer"),
                  "get of a silent owner's key: %r", got)
            check(0.35 <= dt <= 2.0, "answered after %.2f s, timeout 0.4 s",
                  dt)
            got = r.ask(b"set %s 0 0 1\r\ny\r\n" % k3)
            check(got.startswith(b"SERVER_ERROR "), "set: %r", got)
            r.send(b"set %s 0 0 1 noreply\r\nz\r\n" % k3)
            got = r.ask(b"get %s %s\r\n" % (k1, k3))
            check(got.startswith(b"SERVER_ERROR "), "multi-key get: %r", got)
        finally:
            os.kill(silent.pid, signal.SIGCONT)
        got = r.ask(b"stats\r\n", b"END\r\n")
        check(b"STAT noreply_failed 1\r\n" in got, "noreply_failed: %r",
              [ln for ln in got.split(b"\r\n") if b"noreply" in ln])
        r.close()


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


@case
def hostile_input(args):
    """Bad input on the port, as memcached answers it, and the brim
    port's backpressure: a client that pipelines 2,000 gets of a 512 KiB
    value (1 GiB of replies) and never reads is paused, the node's RSS
    stays bounded, and another client is served meanwhile; a line of
    garbage past 2048 bytes closes its connection; a data block of the
    wrong length is CLIENT_ERROR bad data chunk; a value over the limit is
    refused before its bytes are read, the connection kept."""
    n = Standalone(args, "--memory-mb", "64", "--buffer-mb", "16",
                   "--output-limit-kb", "1024")
    try:
        r = Raw(n.mport)
        big = os.urandom(512 << 10)
        check(r.ask(b"set big 0 0 %d\r\n%s\r\n" % (len(big), big))
              == b"STORED\r\n", "set big")
        rss0 = rss_kib(n.proc.pid)
        slow = socket.create_connection(("127.0.0.1", n.mport))
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.settimeout(0.5)
        sent = 0
        try:
            for _ in range(2000):
                slow.sendall(b"get big\r\n")
                sent += 1
        except socket.timeout:
            pass  # the node stopped reading it: backpressure
        time.sleep(1.0)
        grew = rss_kib(n.proc.pid) - rss0
        print("a reader that never reads: %d gets sent, RSS grew %d KiB"
              % (sent, grew))
        check(grew < 64 << 10, "RSS grew %d KiB for a reader that never "
              "reads", grew)
        got = r.ask(b"get big\r\n", b"END\r\n")
        check(got.endswith(big + b"\r\nEND\r\n"),
              "another client is not served beside the slow reader")
        slow.close()
        # A value of the wrong length, then a too-large one, then a line
        # of garbage with no newline.
        check(r.ask(b"set k 0 0 3\r\nabcd\r\n") ==
              b"CLIENT_ERROR bad data chunk\r\n", "bad data chunk")
        check(r.read_until(b"\r\n") == b"ERROR\r\n", "the byte left over")
        check(r.ask(b"set k 0 0 2000000\r\n")
              == b"SERVER_ERROR object too large for cache\r\n",
              "too large, answered before the data")
        r.send(b"x" * 2000000 + b"\r\n")  # swallowed
        check(r.ask(b"version\r\n").startswith(b"VERSION "),
              "the connection is kept after a refused value")
        g = socket.create_connection(("127.0.0.1", n.mport), timeout=5)
        g.sendall(b"\x01" * 5000)
        try:
            rest = g.recv(100)
        except OSError:
            rest = b""
        check(rest == b"", "a long garbage line got %r, not a close", rest)
        g.close()
        check(r.ask(b"version\r\n").startswith(b"VERSION "), "still up")
        r.close()
    finally:
        n.stop()


def big_get_bounded(port, pid, keys, what, pool_kib):
    """One get line naming KEYS (values of about 1 MiB, stored) many
    times over, from a client that does not read for a while: the node
    answers it
    SERVER_ERROR out of memory writing get response rather than holding
    the reply, its RSS grows by no more than about the pool, and a get
    within the pool is still served whole on another connection."""
    rss0 = rss_kib(pid)
    slow = socket.create_connection(("127.0.0.1", port))
    line = b"get " + b" ".join(keys * 10) + b"\r\n"
    slow.sendall(line)
    time.sleep(1.5)
    grew = rss_kib(pid) - rss0
    r = Raw(port)
    got = r.ask(b"get " + b" ".join(keys[:2]) + b"\r\n", b"END\r\n")
    check(got.count(b"VALUE ") == 2, "%s: a get of two big values beside "
          "it: %r", what, got[:200])
    r.close()
    # The slow client's reply ends with the error line (read it now).
    slow.settimeout(10)
    tail, deadline = b"", time.monotonic() + 20
    while b"\r\n" not in tail[-200:] or not (
            tail.endswith(b"END\r\n") or tail.endswith(b"response\r\n")):
        check(time.monotonic() < deadline, "%s: no end of the big get's "
              "reply (%d bytes read)", what, len(tail))
        chunk = slow.recv(1 << 20)
        check(chunk, "%s: closed after %d bytes", what, len(tail))
        tail = (tail + chunk)[-(4 << 20):]
    slow.close()
    print("%s: a get of %d values of 1 MiB from a client that does not "
          "read: RSS grew %d KiB (pool %d KiB); it ends %r"
          % (what, len(keys) * 10, grew, pool_kib, tail[-60:]))
    check(tail.endswith(b"SERVER_ERROR out of memory writing get "
                        b"response\r\n"), "%s: ends %r", what, tail[-80:])
    check(grew < pool_kib + (24 << 10), "%s: RSS grew %d KiB for a %d KiB "
          "pool", what, grew, pool_kib)


@case
def big_get_pool(args):
    """A multi-key get is held to the port's reply pool (--buffer-mb),
    standalone and across a cluster's forwards: a get of 300 values of
    1 MiB (300 MiB of reply) to a client that never reads is refused as
    memcached refuses a reply it cannot allocate, with the node's memory
    bounded by the pool; gets within it are served."""
    n = Standalone(args, "--memory-mb", "128", "--buffer-mb", "16")
    try:
        r = Raw(n.mport)
        val = os.urandom(1000000)
        keys = [b"mb%d" % i for i in range(30)]
        for k in keys:
            check(r.ask(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(val), val))
                  == b"STORED\r\n", "set %r", k)
        r.close()
        big_get_bounded(n.mport, n.proc.pid, keys, "standalone", 16 << 10)
    finally:
        n.stop()
    with cluster(args, n=2, node_args=["--memory-mb", "128",
                                       "--buffer-mb", "16"]) as cl:
        first = cl.nodes["node1"]
        r = Raw(first.mport)
        for k in keys:
            check(r.ask(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(val), val))
                  == b"STORED\r\n", "set %r", k)
        r.close()
        big_get_bounded(first.mport, first.pid, keys, "cluster", 16 << 10)


@case
def too_many_conns(args):
    """A connection over --max-conns is refused in memcached's words
    (its line, then the close), not in the brim port's binary frame; the
    connections already open are served."""
    n = Standalone(args, "--max-conns", "4")
    try:
        held = []
        deadline = time.monotonic() + 5
        while len(held) < 4:
            # wait_listen()'s probe may not be seen closed yet: a refusal
            # here is that, and goes once the node has counted it gone.
            r = Raw(n.mport)
            got = r.ask(b"version\r\n")
            if got.startswith(b"VERSION "):
                held.append(r)
                continue
            r.close()
            check(got == b"ERROR Too many open connections\r\n"
                  and time.monotonic() < deadline,
                  "connection %d of 4 got %r", len(held) + 1, got)
            time.sleep(0.1)
        extra = socket.create_connection(("127.0.0.1", n.mport), timeout=5)
        got = b""
        while True:
            chunk = extra.recv(4096)
            if not chunk:
                break
            got += chunk
        extra.close()
        check(got == b"ERROR Too many open connections\r\n",
              "refused with %r", got)
        check(held[0].ask(b"version\r\n").startswith(b"VERSION "),
              "still served after the refusal")
        for r in held:
            r.close()
    finally:
        n.stop()


def bench_start(args, port, duration):
    cmd = [os.path.join(args.bin, "brim-bench"), "--target", "memcached",
           "--server", "127.0.0.1:%d" % port, "--verify", "--connections",
           "8", "--pipeline", "4", "--keys", "20000", "--duration",
           str(duration), "--json", "--quiet"]
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def refused(port, bound_s):
    """True once a connection to PORT is refused, within BOUND_S."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return True
        time.sleep(0.05)
    return False


@case
def membership_bench(args):
    """brim-bench --target memcached --verify through the port of a node
    that stays while a node joins and the original node with the most
    partitions leaves: lost=0 stale=0 errors=0. The leaving node's port
    stops accepting at once, answers on a connection opened before (for
    keys of every node) while it lingers, and closes when it exits."""
    with cluster(args) as cl:
        t = cl.fetch()
        count = {}
        for o in t["owner"]:
            name = t["members"][o][0]
            count[name] = count.get(name, 0) + 1
        leaver = max(sorted(count), key=lambda n: count[n])
        stayer = min(n for n in sorted(count) if n != leaver)
        print("partitions %r: %s leaves, the bench uses %s"
              % (count, leaver, stayer))
        held = Raw(cl.nodes[leaver].mport)
        check(held.ask(b"set held 0 0 2\r\nhv\r\n") == b"STORED\r\n",
              "set through the leaver's port")
        mk = [b"mk%d" % i for i in range(200)]
        mg = Raw(cl.nodes[stayer].mport)
        for k in mk:
            mg.send(b"set %s 0 0 %d noreply\r\n%s\r\n" % (k, len(k), k))
        want = b"".join(b"VALUE %s 0 %d\r\n%s\r\n" % (k, len(k), k)
                        for k in mk) + b"END\r\n"
        t0 = time.monotonic()
        p = bench_start(args, cl.nodes[stayer].mport, 16)
        time.sleep(max(0, t0 + 3 - time.monotonic()))
        cl.add("node4")
        # Multi-key gets while node4's partitions stream: every key, in
        # order, however its owner answers (MGET entries RETRY or MOVED
        # are asked again one by one).
        for _ in range(20):
            got = mg.ask(b"get " + b" ".join(mk) + b"\r\n", b"END\r\n")
            check(got == want, "a multi-key get during the join: %d of %d "
                  "values", got.count(b"VALUE "), len(mk))
            time.sleep(0.05)
        mg.close()
        cl.wait_members(4, timeout=30)
        print("node4 joined at %.1f s" % (time.monotonic() - t0))
        time.sleep(max(0, t0 + 8 - time.monotonic()))
        lv = cl.nodes[leaver]
        lv.proc.send_signal(signal.SIGTERM)
        print("%s asked to leave at %.1f s" % (leaver, time.monotonic() - t0))
        check(refused(lv.mport, 3.0), "the leaving node's port still accepts")
        # What it holds, and keys of every node, on the connection it had.
        for i in range(30):
            k = b"lv%d" % i
            check(held.ask(b"set %s 0 0 3\r\nv%02d\r\n" % (k, i))
                  == b"STORED\r\n", "set %s through the leaving port" % k)
        got = held.ask(b"get held " + b" ".join(b"lv%d" % i for i in range(30))
                       + b"\r\n", b"END\r\n")
        check(got.count(b"VALUE ") == 31, "get through the leaving port: %r",
              got[:200])
        r, rc = bench_cluster.result(p, 120)
        print("lost=%d stale=%d errors=%d ops/s %.0f"
              % (r["lost"], r["stale"], r["errors"], r["ops_per_sec"]))
        check(r["lost"] == 0 and r["stale"] == 0 and r["errors"] == 0
              and rc == 0, "lost=%d stale=%d errors=%d exit %d", r["lost"],
              r["stale"], r["errors"], rc)
        lv.proc.wait(90)
        print("%s exited %d at %.1f s" % (leaver, lv.proc.returncode,
                                          time.monotonic() - t0))
        check(lv.proc.returncode == 0, "the leaver exited %d",
              lv.proc.returncode)
        held.s.settimeout(5)
        try:
            rest = held.s.recv(100)
        except OSError:
            rest = b""
        check(rest == b"", "the leaver's port did not close: %r", rest)
        held.close()
        # What was written through the leaving port is still there.
        c = Raw(cl.nodes[stayer].mport)
        got = c.ask(b"get held lv7\r\n", b"END\r\n")
        check(got == b"VALUE held 0 2\r\nhv\r\nVALUE lv7 0 3\r\nv07\r\n"
              b"END\r\n", "after the leave: %r", got)
        c.close()

# ---- flush_all: one cluster event (docs/memcached.md, "flush_all") ----

def mc_fill(port, prefix, n):
    """N keys PREFIX<i> = b"<prefix>-<i>" set through PORT (noreply,
    ended by mn); their names."""
    c = Raw(port)
    keys = [b"%s%d" % (prefix, i) for i in range(n)]
    c.send(b"".join(b"set %s 0 0 %d noreply\r\n%s\r\n" % (k, len(k) + 1,
                                                           k + b"!")
                    for k in keys))
    check(c.ask(b"mn\r\n") == b"MN\r\n", "mn after %d sets", n)
    c.close()
    return keys


def mc_read(port, keys):
    """{key: value or None} read through PORT with multi-key gets."""
    c = Raw(port)
    out = {k: None for k in keys}
    for i in range(0, len(keys), 200):
        got = c.ask(b"get " + b" ".join(keys[i:i + 200]) + b"\r\n",
                    b"END\r\n")
        while got.startswith(b"VALUE "):
            line, got = got.split(b"\r\n", 1)
            f = line.split()
            n = int(f[3])
            out[f[1]], got = got[:n], got[n + 2:]
        check(got == b"END\r\n", "get reply ends with %r", got[:100])
    c.close()
    return out


def wait_stat(cl, names, pred, what, bound_s=20.0):
    deadline = time.monotonic() + bound_s
    while True:
        st = {n: cl.stats(n) for n in names}
        if all(pred(s) for s in st.values()):
            return st
        check(time.monotonic() < deadline, "%s: not within %.0f s: %r", what,
              bound_s, {n: (s["flush_mark_ms"], s["flush_pending_ms"],
                            s["mig_partitions_in_flight"])
                        for n, s in st.items()})
        time.sleep(0.05)


class WriteLoad:
    """A thread setting keys w<i> (each once) through PORT and waiting for
    each STORED: when each was sent and answered (monotonic s)."""

    def __init__(self, port, bound_s=60.0, max_keys=50000):
        import threading
        self.c = Raw(port)
        self.done = []          # (key, value, sent_s, stored_s)
        self.stop = False
        self.error = None
        self.bound = time.monotonic() + bound_s
        self.max_keys = max_keys
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        try:
            i = 0
            while (not self.stop and i < self.max_keys
                   and time.monotonic() < self.bound):
                k, v = b"w%d" % i, b"load-%d" % i
                t0 = time.monotonic()
                r = self.c.ask(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v))
                check(r == b"STORED\r\n", "set %s: %r", k, r)
                self.done.append((k, v, t0, time.monotonic()))
                i += 1
                # At most about 2,000 a second: MAX_KEYS lasts the whole
                # case even on a fast machine (in CI, 50,000 unpaced sets
                # ended before the flush did, leaving none after it).
                time.sleep(0.0005)
        except Exception as e:  # noqa: BLE001 (reported by finish())
            self.error = e

    def finish(self):
        self.stop = True
        self.t.join(30)
        self.c.close()
        check(not self.t.is_alive(), "the write load did not stop")
        if self.error is not None:
            raise self.error
        return self.done


@case
def flush_during_join(args):
    """flush_all while a join streams under a write load: afterwards no
    key written before the flush is readable through any node's port, and
    keys written after it are. The three old nodes take flush marks 2 s
    late (BRIM_TEST_FLUSH_CLOCK_LAG_MS: a slow clock, or a late FLUSH),
    so they go on streaming their old keys to the joiner for 2 s after
    it flushed: the joiner must drop
    those batches by their stamps (STATS flush_dropped), and its forwards
    make a lagging old owner flush first."""
    lag = dict(os.environ, BRIM_TEST_STREAM_DELAY_MS="100",
               BRIM_TEST_FLUSH_CLOCK_LAG_MS="2000")
    with cluster(args, node_args=["--memcached-allow-flush"],
                 env=lag) as cl:
        old = mc_fill(cl.nodes["node1"].mport, b"old", 4000)
        load = WriteLoad(cl.nodes["node2"].mport)
        cl.add("node4", dict(os.environ, BRIM_TEST_STREAM_DELAY_MS="100"))
        wait_stat(cl, ["node4"], lambda s: s["mig_keys_in"] > 0,
                  "node4 receiving its partitions")
        j = Raw(cl.nodes["node4"].mport)
        t_send = time.monotonic()
        r = j.ask(b"flush_all\r\n")
        t_ok = time.monotonic()
        j.close()
        check(r == b"OK\r\n", "flush_all: %r", r)
        st = cl.stats("node4")
        mark = st["flush_mark_ms"]
        in_flight = st["mig_partitions_in_flight"]
        print("flush_all answered in %.3f s, mark %d, node4 has %d "
              "partitions in flight" % (t_ok - t_send, mark, in_flight))
        check(mark > 0 and in_flight > 0, "node4: mark %d, %d partitions in "
              "flight at the flush", mark, in_flight)
        lagging = [s["flush_pending_ms"] for s in
                   (cl.stats(n) for n in ("node1", "node2", "node3"))]
        check(all(p == mark for p in lagging) or mark in lagging,
              "the old nodes do not have the mark pending: %r", lagging)
        st = wait_stat(cl, cl.nodes, lambda s: s["flush_mark_ms"] >= mark,
                       "every node applied the flush")
        t_all = time.monotonic()
        time.sleep(0.5)
        done = load.finish()
        new = mc_fill(cl.nodes["node3"].mport, b"new", 500)
        st = cl.wait_streams_done(60)
        dropped = st["node4"]["flush_dropped"]
        print("every node flushed %.1f s after the OK; node4 dropped %d "
              "stream entries older than the mark; %d load writes"
              % (t_all - t_ok, dropped, len(done)))
        check(dropped > 0, "node4 dropped no stream entry by its stamp: the "
              "case did not stream across the flush")
        before = [(k, v) for k, v, _, t in done if t < t_send]
        after = [(k, v) for k, v, t, _ in done if t > t_all]
        check(len(before) > 20 and len(after) > 20, "load: %d writes before "
              "the flush, %d after", len(before), len(after))
        for name in sorted(cl.nodes):
            got = mc_read(cl.nodes[name].mport, old + [k for k, _ in before])
            back = [k for k, v in got.items() if v is not None]
            check(not back, "through %s's port %d keys written before the "
                  "flush are back, e.g. %r", name, len(back), back[:5])
            got = mc_read(cl.nodes[name].mport, new + [k for k, _ in after])
            want = dict([(k, k + b"!") for k in new] + after)
            bad = [k for k in want if got[k] != want[k]]
            check(not bad, "through %s's port %d keys written after the "
                  "flush are wrong, e.g. %r", name, len(bad),
                  [(k, got[k]) for k in bad[:5]])
        print("%d old keys and %d load keys from before the flush gone, "
              "%d keys from after it read back, through all 4 ports"
              % (len(old), len(before), len(new) + len(after)))


@case
def flush_delayed_joiner(args):
    """flush_all 3, then a node joins before the 3 s pass: it learns the
    mark at its join, and when the time comes the keys written before
    the flush are gone on the joiner too (its store empty), as on every
    other node; keys written after it are read back."""
    with cluster(args, node_args=["--memcached-allow-flush"]) as cl:
        old = mc_fill(cl.nodes["node1"].mport, b"old", 3000)
        c = Raw(cl.nodes["node2"].mport)
        t0 = time.monotonic()
        r = c.ask(b"flush_all 3\r\n")
        c.close()
        check(r == b"OK\r\n", "flush_all 3: %r", r)
        mark = cl.stats("node2")["flush_pending_ms"]
        cl.add("node4")
        cl.wait_members(4, timeout=15)
        s4 = wait_stat(cl, ["node4"], lambda s: s["mig_keys_in"] > 0,
                       "node4 receiving keys", 10.0)["node4"]
        joined = time.monotonic() - t0
        print("node4 joined and received %d keys %.1f s after flush_all 3; "
              "its pending mark %d (node2's %d)"
              % (s4["mig_keys_in"], joined, s4["flush_pending_ms"], mark))
        check(joined < 3.0, "the join took %.1f s, past the flush" % joined)
        check(mark > 0 and s4["flush_pending_ms"] == mark,
              "node4 does not know the pending flush: %d, want %d",
              s4["flush_pending_ms"], mark)
        if time.monotonic() - t0 < 2.5:
            got = mc_read(cl.nodes["node4"].mport, old[:200])
            check(all(v is not None for v in got.values()),
                  "keys gone before the delayed flush's time")
        time.sleep(max(0.0, t0 + 3.3 - time.monotonic()))
        cl.wait_streams_done(30)
        st = wait_stat(cl, cl.nodes, lambda s: s["flush_mark_ms"] == mark,
                       "every node applied the delayed flush", 5.0)
        check(st["node4"]["keys"] == 0 and st["node4"]["flushes"] == 1,
              "node4 after the flush: %d keys, %d flushes",
              st["node4"]["keys"], st["node4"]["flushes"])
        for name in sorted(cl.nodes):
            got = mc_read(cl.nodes[name].mport, old)
            back = [k for k, v in got.items() if v is not None]
            check(not back, "through %s's port %d keys written before the "
                  "flush are back, e.g. %r", name, len(back), back[:5])
        new = mc_fill(cl.nodes["node4"].mport, b"new", 300)
        got = mc_read(cl.nodes["node1"].mport, new)
        check(all(got[k] == k + b"!" for k in new), "keys written after the "
              "flush missing")
        print("%d keys gone on all 4 nodes at the flush's time, %d written "
              "after it read back" % (len(old), len(new)))


@case
def flush_mark_survives_coord_restart(args):
    """flush_all 60, then brim-coord is killed and started again on its
    state file: the mark is still there (persisted before the OK), and a
    node that joins after the restart has it pending."""
    with cluster(args, n=2, node_args=["--memcached-allow-flush"]) as cl:
        c = Raw(cl.nodes["node1"].mport)
        check(c.ask(b"flush_all 60\r\n") == b"OK\r\n", "flush_all 60")
        c.close()
        mark = cl.stats("node2")["flush_pending_ms"]
        check(mark > 0, "node2 has no pending mark")
        cl.coord.stop()  # SIGKILL: only what was persisted survives
        cl.coord = mb.Proc(cl.coord.cmd, os.path.join(cl.dir, "coord2.log"))
        mb.wait_port(cl.cport, cl.coord)
        cl.add("node3")
        cl.wait_members(3, timeout=20)
        got = wait_stat(cl, ["node3"], lambda s: s["flush_pending_ms"] != 0,
                        "node3 learning the mark", 10.0)
        check(got["node3"]["flush_pending_ms"] == mark, "node3's pending "
              "mark %d, want %d", got["node3"]["flush_pending_ms"], mark)
        print("mark %d kept across a coordinator restart; node3 has it "
              "pending" % mark)


def cluster_stat(port, name):
    """One counter of `stats cluster` through the memcached port PORT."""
    c = Raw(port)
    got = c.ask(b"stats cluster\r\n", b"END\r\n")
    c.close()
    for line in got.split(b"\r\n"):
        f = line.split()
        if len(f) == 3 and f[1] == name.encode():
            return int(f[2])
    raise AssertionError("no %s in stats cluster" % name)


@case
def gat_split_by_owner(args):
    """A multi-key gat or gats through one node's port of a 3-node
    cluster is split by owner like a get: one MGAT per other owner (not
    one GAT per key), values and CAS values in the order asked with one
    END, misses left out, and every key's TTL set (mg ... t)."""
    with cluster(args) as cl:
        t = cl.fetch()
        port = cl.nodes["node2"].mport
        keys = mc_fill(port, b"g", 300)
        owners = {mb.owner_name(t, k) for k in keys}
        check(owners == {"node1", "node2", "node3"}, "keys not spread: %r",
              owners)
        asked = keys[:150] + [b"nosuch1"] + keys[150:] + [b"nosuch2"]
        c = Raw(port)
        sent0 = cluster_stat(port, "forward_sent")
        got = c.ask(b"gats 100 " + b" ".join(asked) + b"\r\n", b"END\r\n")
        sent = cluster_stat(port, "forward_sent") - sent0
        lines = got.split(b"\r\n")
        heads = [ln.split() for ln in lines[0:-2:2]]
        check([h[1] for h in heads] == keys and lines[-2] == b"END",
              "gats: %d values, not the 300 keys in order", len(heads))
        check(all(len(h) == 5 and int(h[4]) > 0 for h in heads)
              and all(lines[2 * i + 1] == keys[i] + b"!" for i in
                      range(len(keys))), "gats values or CAS values wrong")
        print("gats of 302 keys (2 missing): 300 values in order, %d "
              "forwards" % sent)
        check(sent <= 4, "gats of 302 keys sent %d forwards, not one MGAT "
              "per other owner", sent)
        m = Raw(cl.nodes["node1"].mport)
        for k in keys[::30]:
            r = m.ask(b"mg %s t\r\n" % k)
            check(r.startswith(b"HD t") and 95 <= int(r.split()[1][1:]) <= 100,
                  "TTL of %r after gats 100: %r", k, r)
        got = c.ask(b"gat 0 " + b" ".join(keys) + b"\r\n", b"END\r\n")
        check(got.count(b"VALUE ") == 300, "gat 0: %d values",
              got.count(b"VALUE "))
        for k in keys[::30]:
            r = m.ask(b"mg %s t\r\n" % k)
            check(r == b"HD t-1\r\n", "TTL of %r after gat 0: %r", k, r)
        m.close()
        c.close()


@case
def half_close(args):
    """A client that sends its commands and shuts its sending side
    (shutdown(SHUT_WR), as `nc -q1` or a script piping into a socket
    does) gets every reply before the port closes: sets, gets, incr and
    a multi-key get of keys owned by each of 3 nodes, through node2's
    port, so most of them wait on forwards when the EOF arrives."""
    with cluster(args) as cl:
        t = cl.fetch()
        port = cl.nodes["node2"].mport
        keys = key_per_owner(t, b"h")
        order = [keys[n] for n in sorted(keys)]
        for rounds in (1, 50):
            req, want = b"", b""
            for r in range(rounds):
                for k in order:
                    req += (b"set %s 0 0 2\r\n%02d\r\nget %s\r\n"
                            b"set %sc 0 0 1\r\n5\r\nincr %sc %d\r\n"
                            % (k, r, k, k, k, r + 1))
                    want += (b"STORED\r\nVALUE %s 0 2\r\n%02d\r\nEND\r\n"
                             b"STORED\r\n%d\r\n" % (k, r, 6 + r))
                req += b"get " + b" ".join(order) + b"\r\n"
                want += b"".join(b"VALUE %s 0 2\r\n%02d\r\n" % (k, r)
                                 for k in order) + b"END\r\n"
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(req)
            s.shutdown(socket.SHUT_WR)
            got, deadline = b"", time.monotonic() + 15
            while time.monotonic() < deadline:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
            s.close()
            check(got == want, "after a half-close, %d of %d reply bytes; "
                  "first difference at %d: got %r", len(got), len(want),
                  next((i for i in range(min(len(got), len(want)))
                        if got[i] != want[i]), min(len(got), len(want))),
                  got[-200:])
            print("half-close after %d commands (keys of %s): %d reply "
                  "bytes, all, then the port closed"
                  % (rounds * 13, ", ".join(sorted(keys)), len(got)))


@case
def leave_answers_pipeline(args):
    """A client pipelining sets through the port of a node that leaves
    (SIGTERM) gets a reply to every command the node read, in order, and
    then the close: the sets it got STORED for are all there afterwards
    (read through another node), and the ones it got no reply for were
    never applied. Keys of every node, so most sets are forwarded."""
    with cluster(args) as cl:
        lv = cl.nodes["node3"]
        port = lv.mport
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        st = {"sent": 0, "stored": 0, "why": "closed", "done": False}

        def reader():
            buf = b""
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
                    while b"\r\n" in buf:
                        line, buf = buf.split(b"\r\n", 1)
                        if line != b"STORED":
                            st["why"] = "reply %d: %r" % (st["stored"], line)
                            return
                        st["stored"] += 1
            except OSError as e:
                st["why"] = "recv: %s" % e
            finally:
                st["done"] = True
        th = threading.Thread(target=reader)
        th.start()
        t0, asked = time.monotonic(), False
        # Up to 2,000 sets ahead of the replies: the node stops reading
        # in the middle of what was sent.
        while not st["done"] and time.monotonic() - t0 < 60:
            if not asked and time.monotonic() - t0 > 0.5:
                lv.proc.send_signal(signal.SIGTERM)
                asked = True
            if st["sent"] - st["stored"] > 2000:
                time.sleep(0.001)
                continue
            n = st["sent"]
            try:
                s.sendall(b"".join(b"set lp%d 0 0 %d\r\nv%d\r\n"
                                   % (i, len(b"v%d" % i), i)
                                   for i in range(n, n + 50)))
            except OSError:
                break   # the node shut: the reader has what came back
            st["sent"] = n + 50
        th.join(30)
        sent, stored, why = st["sent"], st["stored"], st["why"]
        s.close()
        check(asked, "the leave was not asked within the load")
        lv.proc.wait(90)
        print("%d sets sent, %d answered STORED, then %s; %s exited %d"
              % (sent, stored, why, "node3", lv.proc.returncode))
        check(0 < stored < sent, "no command left unread (%d of %d): the "
              "test did not reach the leave mid-pipeline", stored, sent)
        got = mc_read(cl.nodes["node1"].mport,
                      [b"lp%d" % i for i in range(sent)])
        missing = [i for i in range(stored) if got[b"lp%d" % i] is None]
        applied = [i for i in range(stored, sent)
                   if got[b"lp%d" % i] is not None]
        print("after the leave: %d of the %d STORED sets missing, %d of "
              "the %d unanswered applied" % (len(missing), stored,
                                             len(applied), sent - stored))
        check(not missing, "STORED but lost: %r", missing[:10])
        check(not applied, "applied without a reply: %r", applied[:10])


def tools_present(args):
    if "memccapable" in args.case and shutil.which("memccapable") is None:
        raise bt.Skip("no memccapable (apt-get install libmemcached-tools)")


def main():
    return bt.main(CASES, options=[("--bin", {}), ("--cluster", {}),
                                   ("--tool", {})],
                   need=("bin",), before=tools_present)


if __name__ == "__main__":
    sys.exit(main())
