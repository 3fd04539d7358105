#!/usr/bin/env python3
"""tests/cluster/coord_sigterm.py - SIGTERM on a cluster node is a graceful
leave (DESIGN.md section 5, server/node/coordlink.c), and so is SIGINT;
SIGTERM to every node at once stops the cluster: real brim-coord and
brim-node processes on loopback, every one stopped by PID.

    coord_sigterm.py --list
    coord_sigterm.py --bin DIR CASE
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "support")]
import brimtest as bt  # noqa: E402
import brimwire as bw  # noqa: E402
from coord_membership import OPS, fetch  # noqa: E402

LEAVE_BOUND_S = 10.0


class Cluster:
    def __init__(self, bindir, n):
        self.bindir = bindir
        self.d = tempfile.mkdtemp(prefix="brim-sigterm-")
        self.port = bw.free_port()
        self.procs = {}
        self._start("coord", [os.path.join(bindir, "brim-coord"),
                              "--listen", "127.0.0.1:%d" % self.port,
                              "--data-dir", self.d, "--partitions", "1024"])
        self._wait_port(self.port, "coord")
        for i in range(1, n + 1):
            name = "node%d" % i
            self._start(name, [os.path.join(bindir, "brim-node"), "--name",
                               name, "--coordinator",
                               "127.0.0.1:%d" % self.port, "--listen",
                               "127.0.0.1:%d" % bw.free_port(),
                               "--partitions", "1024"])
        self.wait(lambda t: len(t["members"]) == n)

    def _start(self, name, cmd):
        log = open(os.path.join(self.d, name + ".log"), "wb")
        self.procs[name] = subprocess.Popen(cmd, stdout=log,
                                            stderr=subprocess.STDOUT)

    def _wait_port(self, port, name):
        deadline = time.monotonic() + 10
        while True:
            assert self.procs[name].poll() is None, self.log(name)
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                return
            except OSError:
                assert time.monotonic() < deadline, "%s did not start" % name
                time.sleep(0.05)

    def log(self, name):
        with open(os.path.join(self.d, name + ".log"), errors="replace") as f:
            return f.read()

    def wait(self, pred, timeout=15.0):
        c = bw.Conn(self.port)
        deadline = time.monotonic() + timeout
        try:
            while True:
                t = fetch(c)
                if pred(t):
                    return t
                assert time.monotonic() < deadline, t["members"]
                time.sleep(0.05)
        finally:
            c.close()

    def close(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
        shutil.rmtree(self.d, ignore_errors=True)


def case_sigterm_leaves(bindir):
    cl = Cluster(bindir, 3)
    try:
        t = cl.wait(lambda t: True)
        p = cl.procs["node2"]
        start = time.monotonic()
        p.send_signal(signal.SIGTERM)
        t2 = cl.wait(lambda x: x["members"] == ["node1", "node3"])
        assert t2["epoch"] > t["epoch"]
        rc = p.wait(timeout=LEAVE_BOUND_S + 2)
        took = time.monotonic() - start
        assert rc == 0, (rc, cl.log("node2"))
        assert took < LEAVE_BOUND_S, took
        assert "left the cluster" in cl.log("node2"), cl.log("node2")
        assert all(o < 2 for o in t2["owner"]), "partition without owner"
        assert cl.procs["node1"].poll() is None
        assert cl.procs["node3"].poll() is None
    finally:
        cl.close()


def brimctl(cl, *args):
    p = subprocess.run([os.path.join(cl.bindir, "brimctl"), "--coordinator",
                        "127.0.0.1:%d" % cl.port] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=60)
    return p.returncode, p.stdout


def case_sigint_leaves(bindir):
    """Issue 12: Ctrl-C (SIGINT) on a cluster node is a graceful leave, as
    SIGTERM is: the node's keys are handed over, not lost."""
    cl = Cluster(bindir, 3)
    try:
        data = os.path.join(cl.d, "data.jsonl")
        with open(data, "w") as f:
            for i in range(2000):
                f.write('{"key":"k%d","value":"v%d-%s"}\n' % (i, i, "x" * 50))
        rc, out = brimctl(cl, "import", data, "--format", "jsonl")
        assert rc == 0, out
        p = cl.procs["node2"]
        p.send_signal(signal.SIGINT)
        cl.wait(lambda x: x["members"] == ["node1", "node3"])
        rc = p.wait(timeout=LEAVE_BOUND_S + 2)
        assert rc == 0, (rc, cl.log("node2"))
        assert "left the cluster" in cl.log("node2"), cl.log("node2")
        rc, out = brimctl(cl, "verify", data, "--format", "jsonl")
        assert rc == 0 and "verified 2000/2000" in out, out
    finally:
        cl.close()


def case_sigterm_all_at_once(bindir):
    """Issue 12: SIGTERM to every node at once (systemctl stop, a container
    runtime) is one change, and with every member leaving there is nothing
    to hand over: the cluster stops without moving data, and every node
    exits 0 promptly."""
    cl = Cluster(bindir, 4)
    try:
        t = cl.wait(lambda t: True)
        start = time.monotonic()
        for i in range(1, 5):
            cl.procs["node%d" % i].send_signal(signal.SIGTERM)
        for i in range(1, 5):
            name = "node%d" % i
            rc = cl.procs[name].wait(timeout=LEAVE_BOUND_S + 2)
            assert rc == 0, (name, rc, cl.log(name))
        took = time.monotonic() - start
        assert took < LEAVE_BOUND_S, took
        t2 = cl.wait(lambda x: x["members"] == [])
        coord = cl.log("coord")
        assert "every member left: the cluster stops" in coord, coord
        # One change: the epoch after the four nodes' is the empty one.
        assert t2["epoch"] == t["epoch"] + 1, (t["epoch"], t2["epoch"])
        for i in range(1, 5):
            log = cl.log("node%d" % i)
            assert "streaming 0 it lost" in log, log[-1500:]
    finally:
        cl.close()


def case_sigterm_last_node(bindir):
    cl = Cluster(bindir, 1)
    try:
        p = cl.procs["node1"]
        p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        while "keys would be lost" not in cl.log("node1"):
            assert time.monotonic() < deadline, cl.log("node1")
            time.sleep(0.05)
        time.sleep(0.5)
        assert p.poll() is None, "the last node left on one SIGTERM"
        t = cl.wait(lambda t: True)
        assert t["members"] == ["node1"], t
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=5) == 0
    finally:
        cl.close()


def case_sigterm_quit(bindir):
    # SIGQUIT exits at once, whatever is in progress.
    cl = Cluster(bindir, 2)
    try:
        p = cl.procs["node1"]
        p.send_signal(signal.SIGQUIT)
        assert p.wait(timeout=5) == 0
    finally:
        cl.close()


CASES = bt.Cases((k[5:], v) for k, v in globals().items()
                  if k.startswith("case_"))


def main():
    return bt.main(CASES, options=[("--bin", dict(
        help="the build's bin directory"))], need=["bin"],
        run=lambda fn, a: fn(a.bin))


if __name__ == "__main__":
    sys.exit(main())
