"""checks.py - what a nemesis run asserts once its changes are over, and
the diagnostics it prints beside the verdict.

Violations (each fails the run):
  - the cluster does not settle: a migration still active, partitions in
    flight or held for a new owner, nodes on different epochs;
  - a partition without a live owner, a node whose partitions_owned is
    not its count in the map, members other than the expected ones,
    within_cap false;
  - an imported record missing or different (brimctl verify), except,
    after a node kill, missing keys of partitions that node owned or was
    streaming (found by reading every key directly);
  - brim-bench: stale, errors, evictions, a failed segment; lost unless a
    node was killed (the bench cannot say which keys were lost, so a run
    with a kill judges lost only through the imported records); errors
    unless a node was killed during that segment;
  - a node declared dead (coordinator log) that the harness did not kill;
  - partitions dropped by a sender (mig_partitions_out_dropped) while no
    node was killed;
  - a sanitizer report in any log;
  - fewer than --min-strike-ratio of the event faults struck while
    partitions were in flight (the run would prove little).
"""

import collections
import json
import os
import re

from cluster import OWNER_NONE
from load import direct_read, partition, verify_file

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                   "runtime error:", "WARNING: ThreadSanitizer")
DEAD_RE = re.compile(r"member (\S+): no heartbeat for (\d+) ms: dead")


def final(run):
    """Every end-of-run check; violations go to RUN.violation()."""
    cs = _cluster_state(run)
    _datasets(run, cs)
    _dead(run)
    _logs(run)
    _coverage(run)
    return cs


def _json(run, *args, server=None):
    rc, out, err = run.cl.brimctl(*args, server=server, timeout=30)
    if rc != 0:
        return None, "exit %d: %s" % (rc, (err or out).strip()[:200])
    try:
        return json.loads(out), None
    except ValueError as e:
        return None, "bad JSON: %s" % e


def _cluster_state(run):
    cl = run.cl
    expect = sorted(run.expected_members())
    cs, err = _json(run, "stats", "--json")
    if cs is None:
        run.violation("brimctl stats --json (coordinator) failed: %s" % err)
        return None
    topo = cl.topo(timeout=5.0)
    members = sorted(n["name"] for n in cs.get("nodes", []))
    run.log("final: epoch %s, members %s, within_cap %s, migration.active "
            "%s, pending %s" % (cs.get("epoch"), ",".join(members),
                                cs.get("within_cap"),
                                cs.get("migration", {}).get("active"),
                                cs.get("pending")))
    if members != expect:
        run.violation("members at the end are %s, expected %s"
                      % (members, expect))
    if cs.get("within_cap") is not True:
        run.violation("within_cap is %r at the end" % cs.get("within_cap"))
    if cs.get("migration", {}).get("active") is not False:
        run.violation("migration.active is %r at the end"
                      % cs.get("migration", {}).get("active"))
    if cs.get("pending"):
        run.violation("an epoch is still pending at the end")
    if topo is None:
        run.violation("MAP_FETCH from the coordinator failed at the end")
        return cs
    counts = collections.Counter(topo["owner"])
    if counts.get(OWNER_NONE) or any(o >= len(topo["members"])
                                     for o in counts if o != OWNER_NONE):
        run.violation("%d partitions have no owner in the final map"
                      % (counts.get(OWNER_NONE, 0)))
    owned_sum = 0
    for i, name in enumerate(topo["members"]):
        n = cl.nodes.get(name)
        if n is None or not n.proc.alive():
            run.violation("member %s of the final map is not running" % name)
            continue
        st, err = _json(run, "stats", "--json", server=n.addr)
        if st is None:
            run.violation("brimctl --server %s stats --json: %s"
                          % (n.addr, err))
            continue
        s = st["nodes"][0]["stats"]
        owned_sum += s.get("partitions_owned", 0)
        problems = []
        if s.get("partitions_owned") != counts.get(i, 0):
            problems.append("partitions_owned %s, the map gives it %d"
                            % (s.get("partitions_owned"), counts.get(i, 0)))
        if s.get("committed_epoch") != topo["epoch"]:
            problems.append("committed_epoch %s, the cluster's is %d"
                            % (s.get("committed_epoch"), topo["epoch"]))
        for k in ("mig_partitions_in_flight", "mig_partitions_out_pending"):
            if s.get(k):
                problems.append("%s %s" % (k, s.get(k)))
        if s.get("evictions"):
            problems.append("evictions %s (the harness sized --memory-mb "
                            "too small)" % s.get("evictions"))
        if problems:
            run.violation("%s at the end: %s" % (name, "; ".join(problems)))
    if owned_sum != topo["P"]:
        run.violation("the members own %d partitions in all, P is %d"
                      % (owned_sum, topo["P"]))
    run.final_topo = topo
    return cs


def _datasets(run, cs):
    cl = run.cl
    topo = run.final_topo
    ports = {n.name: n.port for n in cl.live_nodes()}
    for ds in run.datasets:
        ok, line, bad = verify_file(cl, ds)
        run.records_checked += ds.n
        run.log("brimctl verify %s: %s" % (os.path.basename(ds.path), line))
        if topo is None:
            if not ok:
                run.violation("brimctl verify %s: %s"
                              % (os.path.basename(ds.path), line))
            continue
        missing, different, unread = direct_read(topo, ds, ports)
        run.records_missing += len(missing)
        run.records_bad += len(missing) + len(different) + len(unread)
        if different:
            run.violation("%d imported records read back different (first "
                          "%s)" % (len(different), different[0].decode()))
        if unread:
            run.violation("%d imported records could not be read at their "
                          "owner at the end" % len(unread))
        parts = collections.Counter(partition(topo["seed"], topo["P"], k)
                                    for k in missing)
        excused = {p for p in parts if p in run.kill_partitions}
        unexcused = {p: c for p, c in parts.items() if p not in excused}
        if missing:
            run.log("%s: %d records missing in %d partitions (%d of them "
                    "owned or streamed by a killed node)"
                    % (os.path.basename(ds.path), len(missing), len(parts),
                       len(excused)))
            for p in sorted(parts, key=lambda p: -parts[p])[:8]:
                run.log("    partition %d: %d missing; owners by epoch: %s"
                        % (p, parts[p], run.owner_history(p)))
        if unexcused:
            n = sum(unexcused.values())
            run.violation("%d acknowledged imported records lost (%s) in %d "
                          "partitions no killed node held"
                          % (n, os.path.basename(ds.path), len(unexcused)))
        elif not ok and not run.killed:
            run.violation("brimctl verify %s: %s"
                          % (os.path.basename(ds.path), line))


def _bench(run):
    b = run.bench
    if not b.results:
        run.violation("brim-bench finished no segment")
    for seg, rc, lines in b.failures:
        run.violation("bench segment %d gave no result (exit %d): %s"
                      % (seg, rc, " | ".join(lines)))
    for r in b.results:
        bad = []
        # A request to a node killed in the segment fails until the
        # coordinator declares it dead: its keys may be errors then, as
        # they may be misses (reliability.md section 4).
        kill_in = [t for t in run.kill_times
                   if r["t_start"] - 1.0 <= t <= r["t_end"]]
        for k in ("stale", "errors", "evictions"):
            if k == "errors" and r.get(k) and kill_in:
                run.log("bench segment %d: errors=%s not judged: a node "
                        "was killed during it" % (r["segment"], r.get(k)))
                continue
            if r.get(k):
                bad.append("%s=%s" % (k, r.get(k)))
        if r.get("lost") and not run.killed:
            bad.append("lost=%s" % r.get("lost"))
        if r.get("ok") is False and not bad and not run.killed:
            bad.append("ok=false")
        if bad:
            first = [x for x in r.get("findings", [])
                     if "FAILED" in x or "lost" in x or "stale" in x][:3]
            run.violation("bench segment %d (epochs %s->%s): %s%s"
                          % (r["segment"], r.get("epoch_first"),
                             r.get("epoch_last"), " ".join(bad),
                             ("; " + " | ".join(first)) if first else ""))


def _dead(run):
    try:
        with open(run.cl.coord_log, errors="replace") as f:
            text = f.read()
    except OSError:
        return
    for m in DEAD_RE.finditer(text):
        name = m.group(1)
        if name not in run.killed:
            run.violation("the coordinator declared %s dead (no heartbeat "
                          "for %s ms); the harness did not kill it"
                          % (name, m.group(2)))
    if run.killed:
        return
    # The senders' logs are the ground truth: a leaver that drops its
    # partitions may exit before its STATS are sampled again.
    for name in sorted(run.cl.nodes):
        n, why = _drop_reasons(os.path.join(run.cl.dir, name + ".log"))
        stat = run.last_stats.get(name, {}).get("mig_partitions_out_dropped")
        if n or stat:
            run.violation("%s dropped %d partitions it should have streamed "
                          "(no node died; last mig_partitions_out_dropped "
                          "seen %s): %s" % (name, n, stat, why))


DROP_RE = re.compile(r"partition \d+ of epoch (\d+) to \S+ not completed "
                     r"\(([^)]*)\)")


def _drop_reasons(path):
    """How many partitions the sender's log says it dropped, and its own
    words for why, counted by epoch and reason."""
    c = collections.Counter()
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = DROP_RE.search(line)
                if m:
                    c["epoch %s: %s" % m.groups()] += 1
    except OSError:
        pass
    return sum(c.values()), ", ".join(
        "%s x%d" % kv for kv in sorted(c.items())) or "no reason logged"


def _logs(run):
    """Sanitizer reports fail the run; warnings and errors of every log
    are counted by message (numbers and addresses folded) as diagnostics."""
    groups = collections.Counter()
    for fn in sorted(os.listdir(run.cl.dir)):
        if not fn.endswith(".log") or fn.startswith("bench"):
            continue
        path = os.path.join(run.cl.dir, fn)
        with open(path, errors="replace") as f:
            for line in f:
                for mark in SANITIZER_MARKS:
                    if mark in line:
                        run.violation("%s: %s" % (fn, line.strip()[:200]))
                parts = line.split(" ", 4)
                if len(parts) == 5 and parts[2] in ("W", "E"):
                    msg = re.sub(r"\d+", "N", parts[4].strip())
                    msg = re.sub(r"N(\.N)+:N", "ADDR", msg)
                    groups[(fn[:-4].rstrip("0123456789") or fn,
                            parts[2], msg[:110])] += 1
    run.warn_groups = groups


def _coverage(run):
    ev = [f for f in run.faults if not f["skipped"]]
    struck = [f for f in ev if f["in_flight"]]
    run.log("faults: %d injected, %d struck while partitions were in flight"
            ", %d skipped" % (len(ev), len(struck),
                              len(run.faults) - len(ev)))
    if ev and len(struck) < run.a.min_strike_ratio * len(ev):
        run.violation("VACUOUS: only %d of %d faults struck while partitions "
                      "were in flight (--min-strike-ratio %.2f)"
                      % (len(struck), len(ev), run.a.min_strike_ratio))
