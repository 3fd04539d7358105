#!/usr/bin/env python3
"""tests/cluster/coord_membership_etcd.py - coord_membership.py's cases
with brim-coord's state in a real etcd (issue 15 acceptance 5: the two
state back ends keep one behaviour). Each case starts a one-member etcd
(Debian's etcd-server, data on tmpfs; etcd_coord.py's Etcd), runs the
file-mode case unchanged with brim-coord --etcd in place of --data-dir
(a fresh key prefix per cluster, the same one when a case restarts the
coordinator on its directory), and stops etcd by PID.

    coord_membership_etcd.py --list
    coord_membership_etcd.py --coord PATH CASE

Left out, as they test the state file itself: join_order (it copies a
state file to make one cluster twice), bad_settings (--data-dir's
checks), and restart's corrupted-file half (restart_etcd here: a
SIGKILLed coordinator run again loads the same epoch and map from etcd
once its old lease lapses). Skipped (77) without an etcd binary.
"""
import os
import signal
import sys
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "support")]
import brimtest as bt  # noqa: E402
import coord_membership as cm  # noqa: E402
import etcd_coord as ec  # noqa: E402

FILE_ONLY = ("join_order", "bad_settings", "restart",
             "failed_start_writes_nothing")
ETCD = None                     # the case's etcd, while it runs


class EtcdCoord(cm.Coord):
    """cm.Coord on etcd: --etcd, a name, and a key prefix named after
    DDIR, so that a coordinator started again on DDIR finds its state."""

    def state_args(self, ddir):
        self.ddir = ddir
        return ["--etcd", ETCD.url, "--name", "c1",
                "--etcd-prefix", "/brim/" + os.path.basename(ddir)]

    def ready(self):
        # Membership is served once elected (NOTLEADER before): after a
        # SIGKILL that is when the old leader's lease lapses.
        deadline = time.monotonic() + ec.TTL_S + 8
        while "elected leader" not in self.output():
            assert self.proc.poll() is None, self.output()
            assert time.monotonic() < deadline, \
                "not elected: %s" % self.output()[-2000:]
            time.sleep(0.02)


def case_restart_etcd(binary):
    """A SIGKILLed coordinator started again loads the committed epoch
    and map from etcd (after its old lease lapses), and serves joins."""
    co, nodes, d, t = cm.cluster_of(binary, ["a", "b"])
    try:
        co.kill()
        co = cm.Coord(binary, d)
        c = co.conn()
        t2 = cm.fetch(c)
        c.close()
        assert t2["epoch"] == t["epoch"] and t2["owner"] == t["owner"], \
            (t["epoch"], t2["epoch"])
        assert "loaded from etcd at epoch %d" % t["epoch"] in co.output(), \
            co.output()
        for n in nodes:                  # the nodes come back, as after
            n.conn.close()               # a restart in file mode
            n.coord_port = co.port
            assert n.join()[0] == 0
        n = cm.FakeNode("c", co.port)
        nodes.append(n)
        assert n.join()[0] == 0
        c = co.conn()
        deadline = time.monotonic() + 10
        while True:                      # heard, none is declared dead
            for n in nodes:
                assert n.heartbeat()[0] == 0
            t3 = cm.fetch(c)
            if len(t3["members"]) == 3:
                break
            assert time.monotonic() < deadline, t3["members"]
            time.sleep(0.1)
        c.close()
        assert t3["epoch"] > t2["epoch"], (t2["epoch"], t3["epoch"])
        assert t3["members"] == ["a", "b", "c"], t3["members"]
        co.kill(signal.SIGTERM)
    finally:
        cm.teardown(co, nodes, d)


CASES = bt.Cases((k, v) for k, v in cm.CASES.items() if k not in FILE_ONLY)
CASES(case_restart_etcd)


def run(fn, a):
    global ETCD
    ETCD = ec.Etcd(1)
    saved = cm.Coord
    cm.Coord = EtcdCoord
    try:
        return fn(a.coord)
    finally:
        cm.Coord = saved
        ETCD.close()


def main():
    return bt.main(CASES, options=[("--coord", dict(
        help="the brim-coord binary"))], need=["coord"], run=run)


if __name__ == "__main__":
    sys.exit(main())
