"""cluster.py - the processes of one nemesis run: brim-coord and the
brim-node processes from the build tree, on loopback ports below the
ephemeral range, in one fresh directory; the wire calls the harness makes
to them (STATS, CLUSTER_STATS, MAP_FETCH); and the low-level faults
(signals, TCP resets).

Every process is started in a session of its own (a Ctrl-C reaches the
harness only) and stopped by its PID in close(), which the run calls on
every way out.
"""

import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import brimtest as bt  # noqa: E402  (the op table, read from proto/ops.h)
import brimwire as bw  # noqa: E402  (the project's wire codec for tests)
import ports  # noqa: E402  (free loopback ports)

_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def die_with_parent():
    """preexec_fn: the child gets SIGKILL if the thread that started it
    dies, so a harness killed by CTest's timeout leaves no daemon."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


OP_MAP_FETCH = bt.OP["MAP_FETCH"]
OP_CLUSTER_STATS = bt.OP["CLUSTER_STATS"]
OWNER_NONE = 65535


class Ports:
    """Free loopback ports below the ephemeral range (tests/support/
    ports.py: a random start, not the seed's generator, since ports are
    no decision of the run)."""

    def take(self):
        return ports.free_port()


class Proc:
    """One daemon: its command line, log file, and process."""

    def __init__(self, name, cmd, log, env=None):
        self.name = name
        self.cmd = cmd
        self.log = log
        self.env = env
        self.proc = None
        self.paused = False
        self.expected_exit = False  # a leave, a kill or the teardown
        self.start()

    def start(self):
        with open(self.log, "ab") as f:
            f.write(("---- nemesis: start %s ----\n"
                     % " ".join(self.cmd)).encode())
            f.flush()
            self.proc = subprocess.Popen(
                self.cmd, stdout=f, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
                env=self.env, preexec_fn=die_with_parent)
        self.paused = False

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def send(self, sig):
        if self.alive():
            os.kill(self.proc.pid, sig)
            if sig == signal.SIGSTOP:
                self.paused = True
            elif sig == signal.SIGCONT:
                self.paused = False

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, sig=signal.SIGTERM, timeout=5.0):
        """SIGCONT (it may be paused), SIG, then SIGKILL after TIMEOUT."""
        if not self.alive():
            return self.proc.returncode if self.proc else None
        self.expected_exit = True
        try:
            os.kill(self.proc.pid, signal.SIGCONT)
            os.kill(self.proc.pid, sig)
        except ProcessLookupError:
            pass
        rc = self.wait(timeout)
        if rc is None:
            self.proc.kill()
            rc = self.wait(5.0)
        return rc

    def tail(self, n=15):
        try:
            with open(self.log, errors="replace") as f:
                return f.read().splitlines()[-n:]
        except OSError:
            return []


class Node:
    """A brim-node of the run: its spec (plan.NodeSpec), port and Proc."""

    def __init__(self, spec, port, proc):
        self.spec = spec
        self.name = spec.name
        self.port = port
        self.proc = proc
        self.conn = None
        self.lock = threading.Lock()

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def stats(self, timeout=0.6):
        """The node's STATS (a dict), or None if it does not answer within
        TIMEOUT (paused, gone)."""
        with self.lock:
            for _ in range(2):
                try:
                    if self.conn is None:
                        self.conn = bw.Conn(self.port, timeout=timeout)
                    rep = self.conn.call("STATS", 7, timeout=timeout)
                    if rep[0] == 0 and isinstance(rep[2], dict):
                        return rep[2]
                    return None
                except (OSError, bw.Closed, AssertionError, ValueError):
                    self.drop_conn()
            return None

    def drop_conn(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def decode_topo(t):
    """MAP_FETCH's topology as a dict: seed, epoch, P, members (names),
    owner (a list of P member indexes, OWNER_NONE for none)."""
    def s(x):
        return x.decode() if isinstance(x, bytes) else x
    members = [s(m[0]) for m in t[7]]
    ob = bytes(t[8])
    owner = [ob[2 * i] | (ob[2 * i + 1] << 8) for i in range(t[4])]
    return {"seed": t[2], "epoch": t[3], "P": t[4], "members": members,
            "owner": owner}


class Cluster:
    """The coordinator and nodes of one run, in DIR."""

    def __init__(self, bindir, dir, plan, args, log):
        self.bin = bindir
        self.dir = dir
        self.plan = plan
        self.a = args
        self.log = log              # the run's event logger
        self.ports = Ports()
        self.nodes = {}             # name -> Node (every node started)
        self.coord = None
        self.coord_restarts = 0
        self.secret = os.path.join(dir, "secret")
        fd = os.open(self.secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                     0o600)
        os.write(fd, os.urandom(32))
        os.close(fd)
        self.cport = self.ports.take()
        self.caddr = "127.0.0.1:%d" % self.cport
        os.mkdir(os.path.join(dir, "coord-data"))
        self.coord_log = os.path.join(dir, "coord.log")

    # ---- processes ----

    def start_coord(self):
        cmd = [os.path.join(self.bin, "brim-coord"), "--listen", self.caddr,
               "--data-dir", os.path.join(self.dir, "coord-data"),
               "--partitions", str(self.a.partitions),
               "--dead-after-ms", str(self.a.dead_after_ms),
               "--secret-file", self.secret]
        self.coord = Proc("coord", cmd, self.coord_log)
        self.wait_listening(self.cport, self.coord, 10.0)

    def restart_coord(self):
        """Start brim-coord again: the same command line (flags, port and
        data dir), appending to the same log."""
        self.coord.start()
        self.coord_restarts += 1
        self.wait_listening(self.cport, self.coord, 10.0)

    def wait_listening(self, port, proc, timeout):
        deadline = time.monotonic() + timeout
        while True:
            if not proc.alive():
                raise RuntimeError("%s exited at start (%s): %s" % (
                    proc.name, proc.proc.returncode,
                    " | ".join(proc.tail(5))))
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("%s not listening on %d within %.0f s"
                                       % (proc.name, port, timeout))
                time.sleep(0.05)

    def start_node(self, spec):
        port = self.ports.take()
        cmd = [os.path.join(self.bin, "brim-node"), "--name", spec.name,
               "--coordinator", self.caddr,
               "--listen", "127.0.0.1:%d" % port,
               "--partitions", str(self.a.partitions),
               "--memory-mb", str(self.plan.memory_mb),
               "--migrate-mb-per-s", str(spec.pace),
               "--weight", "%g" % spec.weight,
               "--secret-file", self.secret]
        proc = Proc(spec.name, cmd,
                    os.path.join(self.dir, spec.name + ".log"))
        n = Node(spec, port, proc)
        self.nodes[spec.name] = n
        self.wait_listening(port, proc, 10.0)
        return n

    def live_nodes(self):
        return [n for n in self.nodes.values() if n.proc.alive()]

    def close(self):
        """Stop every process this run started, by PID: nodes at once
        (SIGQUIT), then the coordinator (SIGTERM); SIGKILL after 5 s."""
        for n in self.nodes.values():
            n.drop_conn()
            n.proc.stop(signal.SIGQUIT)
        if self.coord is not None:
            self.coord.stop(signal.SIGTERM)

    # ---- wire calls ----

    def _coord_call(self, op, timeout):
        c = bw.Conn(self.cport, timeout=timeout)
        try:
            rep = c.call(op, 11, timeout=timeout)
        finally:
            c.close()
        if rep[0] != 0:
            raise RuntimeError("coordinator op %d: status %r" % (op, rep[0]))
        return rep[2]

    def topo(self, timeout=1.0):
        """The committed topology (decode_topo), or None if the
        coordinator does not answer."""
        try:
            return decode_topo(self._coord_call(OP_MAP_FETCH, timeout))
        except (OSError, bw.Closed, RuntimeError, AssertionError,
                ValueError, IndexError, TypeError):
            return None

    def cluster_stats(self, timeout=1.0):
        try:
            return self._coord_call(OP_CLUSTER_STATS, timeout)
        except (OSError, bw.Closed, RuntimeError, AssertionError,
                ValueError):
            return None

    def brimctl(self, *args, server=None, timeout=60):
        """Run brimctl against the coordinator (or SERVER): returns
        (exit status, stdout, stderr); -1 if it timed out."""
        cmd = [os.path.join(self.bin, "brimctl")]
        cmd += ["--server", server] if server else \
            ["--coordinator", self.caddr]
        cmd += ["--secret-file", self.secret] + list(args)
        try:
            r = subprocess.run(cmd, capture_output=True, timeout=timeout,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return -1, "", "timed out after %d s" % timeout
        return (r.returncode, r.stdout.decode(errors="replace"),
                r.stderr.decode(errors="replace"))

    def in_flight(self):
        """Sum of the live nodes' incoming partitions in flight, asked now
        (a node that does not answer within 0.6 s counts as unknown), and
        the per-node figures."""
        per = {}
        for n in self.live_nodes():
            if n.proc.paused:
                per[n.name] = None
                continue
            st = n.stats()
            per[n.name] = None if st is None else \
                st.get("mig_partitions_in_flight", 0)
        total = sum(v for v in per.values() if v)
        return total, per

    # ---- TCP resets ----

    def node_links(self, victim=None):
        """Established node-to-node TCP connections, as (local, peer)
        address pairs of the connecting side: sockets owned by a node's
        PID whose peer is another node's listening port. With VICTIM,
        only those to or from that node."""
        pids = {n.proc.pid: n for n in self.live_nodes()}
        ports = {n.port: n for n in self.live_nodes()}
        out = subprocess.run(["ss", "-tnpH", "state", "established"],
                             capture_output=True, timeout=10).stdout
        links = []
        for line in out.decode(errors="replace").splitlines():
            f = line.split()
            if len(f) < 5 or "users:" not in line:
                continue
            local, peer = f[2], f[3]
            m = re.search(r"pid=(\d+),", line)
            owner = pids.get(int(m.group(1))) if m else None
            if owner is None:
                continue
            try:
                lport = int(local.rsplit(":", 1)[1])
                pport = int(peer.rsplit(":", 1)[1])
            except (ValueError, IndexError):
                continue
            dst = ports.get(pport)
            if dst is None or dst is owner or lport == owner.port:
                continue        # not to a node, or the accepting side
            if victim and victim not in (owner.name, dst.name):
                continue
            links.append((local, peer, owner.name, dst.name))
        return links

    def reset_links(self, links):
        """ss -K each (local, peer) connection: the kernel aborts it and
        the peer gets a RST. Returns how many ss reported killed."""
        n = 0
        for local, peer, _, _ in links:
            lh, lp = local.rsplit(":", 1)
            ph, pp = peer.rsplit(":", 1)
            r = subprocess.run(
                ["ss", "-K", "-tnH", "state", "established",
                 "src", "%s:%s" % (lh, lp), "dst", "%s:%s" % (ph, pp)],
                capture_output=True, timeout=10)
            n += len([x for x in r.stdout.decode().splitlines()
                      if x.strip()])
        return n
