#!/usr/bin/env python3
"""tests/cluster/migrations_view.py - migration you can see (issue 13 item
3): `brimctl migrations` lists each sender's streams with bytes and keys
sent, rate and ETA, and the coordinator's reason while a change waits; a
real cluster of brim-coord and brim-node processes on loopback, stopped by
PID.

    migrations_view.py --list
    migrations_view.py --bin BUILD/bin CASE

streams_listed   while a join streams (slowed by the test hook), every
                 sender's row names it and the joiner, with bytes and keys
                 sent, a rate and an ETA; a second join asked meanwhile
                 shows the coordinator's reason; at the end every row is
                 done, nothing dropped, no key left, and the keys sent to
                 the joiner cover what the coordinator says moved; after
                 the joiner leaves, its streams are listed while it
                 sends what it held; once it is gone, only rows of the
                 leave's epoch are listed (none of the join before it)
unfinished_counted
                 a sender killed mid-stream: its unfinished partitions
                 are counted in the summary line, not shown as arrived
"""
import json
import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "support")]
import brimtest as bt  # noqa: E402
import migrate_basic as mb  # noqa: E402

CASES = bt.Cases()
case = CASES


def brimctl(bindir, cport, *args):
    r = subprocess.run([os.path.join(bindir, "brimctl"), "--coordinator",
                        "127.0.0.1:%d" % cport] + list(args),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, (args, r.returncode, r.stderr)
    return r.stdout


def brimctl_any(bindir, cport, *args):
    """brimctl's stdout whatever its exit status."""
    return subprocess.run([os.path.join(bindir, "brimctl"), "--coordinator",
                           "127.0.0.1:%d" % cport] + list(args),
                          capture_output=True, text=True, timeout=30).stdout


def migrations(bindir, cport):
    return json.loads(brimctl(bindir, cport, "migrations", "--json"))


def poll(what, fn, timeout):
    """fn() until it returns something true, at most TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = fn()
        if got:
            return got
        assert time.monotonic() < deadline, "no %s in %.0f s" % (what,
                                                                 timeout)
        time.sleep(0.2)


@case
def streams_listed(bindir):
    # 120 ms per batch: the join's ~256 partitions stream for seconds.
    cl, t = mb.start3(bindir, delay_ms=120)
    try:
        mb.load(cl, t)
        assert migrations(bindir, cl.cport)["streams"] == []
        cl.add("node4")

        def streaming():
            m = migrations(bindir, cl.cport)
            rows = [r for r in m["streams"] if r["state"] == "streaming"
                    and r["keys_sent"] > 0 and r["destination"] == "node4"]
            return (m, rows) if len(rows) >= 2 else None
        m, rows = poll("two streams to node4 with keys sent", streaming, 30)
        assert m["active"] is True, m
        old = ("node1", "node2", "node3")
        for r in m["streams"]:        # a cap overflow moves between them
            assert r["source"] in old, r
            assert r["destination"] in old + ("node4",), r
        for r in rows:
            assert r["destination_addr"] == "127.0.0.1:%d" % \
                cl.nodes["node4"].port, r
            assert 0 <= r["done"] < r["partitions"], r
            assert r["bytes_sent"] > 0 and r["mb_per_s"] > 0, r
            # The ETA is the keys left at the rate so far.
            rate = r["keys_sent"] / r["elapsed_s"]
            assert abs(r["eta_s"] - r["keys_left"] / rate) <= \
                0.01 + 0.01 * r["eta_s"], r
        text = brimctl(bindir, cl.cport, "migrations")
        assert "source" in text and "node4" in text and "eta_s" in text, text
        # Under the table, the rows' own sum (the senders' counts now).
        again = migrations(bindir, cl.cport)
        got = re.search(r"^rows: partitions (\d+)/(\d+) done, (\d+) keys "
                        r"left", text, re.M)
        assert got, text
        total = sum(r["partitions"] for r in again["streams"])
        assert int(got.group(2)) == total > 0, (text, again)
        assert int(got.group(1)) <= total, text
        # --json carries the same sum as "rows".
        assert again["rows"]["partitions"] == total, again
        assert again["rows"]["done"] == sum(
            r["done"] + r["dropped"] for r in again["streams"]), again
        assert again["rows"]["keys_left"] == sum(
            r["keys_left"] for r in again["streams"]), again
        # The cluster's stats carry the same rows while a migration runs.
        st = json.loads(brimctl(bindir, cl.cport, "stats", "--json"))
        if st["migration"]["active"]:
            assert any(r["destination"] == "node4"
                       for r in st.get("streams", [])), st

        # A second join while the first streams waits, and says why.
        cl.add("node5")

        def waits():
            m = migrations(bindir, cl.cport)
            return m if m["waiting"] else None
        m = poll("waiting reason", waits, 20)
        assert m["waiting_ms"] >= 0, m

        cl.wait_members(5, timeout=90)
        cl.wait_streams_done(timeout=90)
        # The coordinator learns the end from the next heartbeats.
        m = poll("idle migration", lambda: (lambda m: m if not m["active"]
                                            else None)(
            migrations(bindir, cl.cport)), 20)
        assert m["waiting"] == "", m
        assert m["streams"], m
        m5 = m["epoch"]
        # Every node the change streamed to or from told the coordinator
        # of its end at once, not at its next heartbeat.
        for name in ("node1", "node2", "node3", "node4", "node5"):
            assert cl.stats(name)["heartbeats_early"] >= 1, name
        for r in m["streams"]:
            assert r["state"] == "done", r
            assert r["done"] == r["partitions"] and r["dropped"] == 0, r
            assert r["keys_left"] == 0 and r["eta_s"] == 0, r
        # The last change is node5's join (every old node gave it some):
        # what the streams sent covers the keys the coordinator counted
        # as moved (equal unless a stream began again).
        to5 = [r for r in m["streams"] if r["destination"] == "node5"]
        assert {r["source"] for r in to5} == set(old + ("node4",)), to5
        sent = sum(r["keys_sent"] for r in m["streams"])
        st = json.loads(brimctl(bindir, cl.cport, "stats", "--json"))
        assert "streams" not in st, st     # idle: the nodes are not asked
        moved = st["migration"]["keys_moved"]
        assert sent >= moved > 0, (sent, moved, m["streams"])
        assert all(r["epoch"] == m["epoch"] for r in m["streams"]), m

        # node5 leaves: while it streams what it held (no longer a
        # member), its rows are listed, asked of it as a departed node.
        brimctl(bindir, cl.cport, "leave", "node5")

        def leaver_streams():
            m = migrations(bindir, cl.cport)
            rows = [r for r in m["streams"] if r["source"] == "node5"
                    and r["state"] == "streaming" and r["keys_sent"] > 0]
            return (m, rows) if rows and m["epoch"] > m5 else None
        m, rows = poll("a stream from the leaver node5", leaver_streams, 30)
        for r in rows:
            assert r["source_addr"] == "127.0.0.1:%d" % \
                cl.nodes["node5"].port, r
            assert r["destination"] in old + ("node4",), r
            assert r["epoch"] == m["epoch"], (r, m["epoch"])
        print("during the leave: %d streams from node5 listed (%s)"
              % (len(rows), ", ".join(r["destination"] for r in rows)))
        assert "node5" in brimctl(bindir, cl.cport, "migrations")
        st = json.loads(brimctl(bindir, cl.cport, "stats", "--json"))
        gone = {d["name"]: d["state"] for d in st["departed"]}
        assert gone.get("node5") == "leaving" or (
            gone.get("node5") == "left" and not st["migration"]["active"]), \
            st
        cl.wait_members(4, timeout=90)
        # Once it is gone its rows leave with it, and the members' rows of
        # node5's join (an earlier epoch) are not shown as this change's.
        poll("node5 gone", lambda: cl.nodes["node5"].proc.poll() is not None,
             60)
        m = poll("idle migration after the leave",
                 lambda: (lambda m: m if not m["active"] and
                          m["epoch"] > m5 else None)(
                     migrations(bindir, cl.cport)), 20)
        for r in m["streams"]:
            assert r["epoch"] == m["epoch"], (r, m["epoch"])
            assert "node5" not in (r["source"], r["destination"]), r
        # Its change over, the leaver is named as left, not leaving.
        st = json.loads(brimctl(bindir, cl.cport, "stats", "--json"))
        gone = {d["name"]: d["state"] for d in st["departed"]}
        assert gone == {"node5": "left"}, (gone, st["migration"])
        text = brimctl(bindir, cl.cport, "migrations")
        if not m["streams"]:
            assert "no stream" in text and "epoch %d" % m["epoch"] in text, \
                text
    except BaseException:
        cl.dump()
        raise
    finally:
        cl.close()


@case
def unfinished_counted(bindir):
    """A sender killed (SIGKILL) while its streams to a joiner run: the
    partitions it had not finished end unfinished, and `brimctl
    migrations` says how many (not "all arrived")."""
    cl, t = mb.start3(bindir, delay_ms=120)
    try:
        mb.load(cl, t)
        cl.add("node4")

        def streaming():
            m = migrations(bindir, cl.cport)
            return [r for r in m["streams"] if r["source"] == "node1"
                    and r["destination"] == "node4"
                    and r["state"] == "streaming" and r["keys_sent"] > 0]
        poll("a stream from node1 to node4", streaming, 30)
        cl.nodes["node1"].proc.kill()
        # Until node1 is declared dead, asking it fails (exit 2): the
        # rows of the others still print.
        m = poll("unfinished partitions counted",
                 lambda: (lambda m: m if m["partitions_unfinished"] > 0
                          else None)(json.loads(
                              brimctl_any(bindir, cl.cport, "migrations",
                                          "--json"))), 40)
        text = brimctl_any(bindir, cl.cport, "migrations")
        first = text.splitlines()[0]
        print("after node1's SIGKILL: %s" % first)
        assert "%d unfinished" % m["partitions_unfinished"] in first, text
    except BaseException:
        cl.dump()
        raise
    finally:
        cl.close()


if __name__ == "__main__":
    sys.exit(mb.main(CASES))
