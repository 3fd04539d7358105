"""faults.py - the nemesis's menu: each fault of a plan (plan.Fault) made
real against the running cluster, with a record of when it struck and how
many partitions were streaming into the nodes at that moment (the sum of
their mig_partitions_in_flight, asked just before the blow).

Kinds (plan.EVENT_FAULTS):
  coord_kill        SIGKILL brim-coord, restart it DOWN_S later with the
                    same command line and data dir
  coord_pause       SIGSTOP brim-coord for less than dead-after
  coord_pause_long  SIGSTOP brim-coord for longer than dead-after
                    (DESIGN.md 13: its own pause must not kill the nodes)
  pause_receiver    SIGSTOP a node receiving partitions, < dead-after
  pause_sender      SIGSTOP a node sending partitions, < dead-after
  tcp_reset         ss -K every established node-to-node connection (or
                    those of the receiver or the sender): both ends get
                    a reset, both processes stay up
  bigvals           brimctl import of records whose values are exactly
                    the value limit (1 MiB), checked at the end
  back_to_back      (recorded by the runner) the next change is asked for
                    while this one's migration runs
  node_kill         SIGKILL a sender or receiver (--node-kill only)
"""

import os
import signal
import time

from load import Dataset, import_file


def strike(run, step, f):
    """Inject fault F of STEP; returns its record (a dict)."""
    cl = run.cl
    rec = {"kind": f.kind, "step": step.index, "victim": f.victim,
           "at_s": run.elapsed(), "skipped": None, "detail": ""}
    victim = cl.nodes.get(f.victim) if f.victim else None
    if f.victim and (victim is None or not victim.proc.alive()):
        rec["skipped"] = "%s is not running" % f.victim
        rec["in_flight"], rec["per_node"] = cl.in_flight()
        return rec
    rec["in_flight"], rec["per_node"] = cl.in_flight()
    fn = globals()["_" + f.kind]
    fn(run, f, victim, rec)
    return rec


def _coord_kill(run, f, victim, rec):
    cl = run.cl
    run.bench.coord_ok.clear()
    run.coord_fault = True
    try:
        cl.coord.expected_exit = True
        cl.coord.send(signal.SIGKILL)
        cl.coord.wait(5.0)
        time.sleep(f.params["down_s"])
        cl.restart_coord()
        cl.coord.expected_exit = False
    finally:
        run.coord_fault = False
        run.bench.coord_ok.set()
    rec["detail"] = "down %.2f s, restarted (pid %d)" % (f.params["down_s"],
                                                         cl.coord.pid)


def _pause(run, proc, secs):
    proc.send(signal.SIGSTOP)
    try:
        time.sleep(secs)
    finally:
        proc.send(signal.SIGCONT)


def _coord_pause(run, f, victim, rec):
    run.bench.coord_ok.clear()
    run.coord_fault = True
    try:
        _pause(run, run.cl.coord, f.params["pause_s"])
    finally:
        run.coord_fault = False
        run.bench.coord_ok.set()
    rec["detail"] = "paused %.2f s (dead-after %d ms)" % (
        f.params["pause_s"], run.a.dead_after_ms)


_coord_pause_long = _coord_pause


def _node_pause(run, f, victim, rec):
    _pause(run, victim.proc, f.params["pause_s"])
    rec["detail"] = "paused %.2f s (dead-after %d ms)" % (
        f.params["pause_s"], run.a.dead_after_ms)


_pause_receiver = _node_pause
_pause_sender = _node_pause


def _tcp_reset(run, f, victim, rec):
    cl = run.cl
    links = cl.node_links(f.victim)
    n = cl.reset_links(links)
    rec["detail"] = "scope %s: %d node-to-node connections found, %d reset" \
        % (f.params["scope"] + (" " + f.victim if f.victim else ""),
           len(links), n)
    rec["links"] = ["%s>%s" % (a, b) for _, _, a, b in links]


def _bigvals(run, f, victim, rec):
    cl = run.cl
    k = len(run.datasets)
    path = os.path.join(cl.dir, "bigvals.%d.jsonl" % k)
    n = f.params["count"]
    ds = Dataset(path, "nemb%d.%d:" % (run.plan.seed, k),
                 [run.a.max_value_bytes] * n, run.plan.seed * 100 + k)
    ds.write()
    rc, line = import_file(cl, ds, timeout=120)
    run.datasets.append(ds)
    rec["detail"] = "%d records of %d bytes: import exit %d: %s" % (
        n, run.a.max_value_bytes, rc, line)
    if rc != 0:
        run.violation("bigvals import of %d records at the value limit "
                      "failed (exit %d): %s" % (n, rc, line))


def _node_kill(run, f, victim, rec):
    cl = run.cl
    topo = cl.topo()
    victim.proc.expected_exit = True
    victim.proc.send(signal.SIGKILL)
    victim.proc.wait(5.0)
    run.killed.add(victim.name)
    run.kill_times.append(time.monotonic())
    # The partitions it owned or was streaming: owned in the committed
    # map, or moving to or from it between the map before and this one.
    prev = run.prev_map(topo["epoch"]) if topo else None
    allowed = set()
    for t in (topo, prev):
        if t is None:
            continue
        for p, o in enumerate(t["owner"]):
            if o < len(t["members"]) and t["members"][o] == victim.name:
                allowed.add(p)
    run.kill_partitions |= allowed
    rec["detail"] = "killed pid %d; %d partitions owned or streaming" % (
        victim.proc.pid, len(allowed))
