#!/usr/bin/env python3
"""nemesis.py - brim's randomized fault harness (issue 10): one seed, one
cluster, a random sequence of joins and graceful leaves under brim-bench
--verify load, faults injected while the partitions stream, and checks
that no acknowledged write was lost. The idea is Jepsen's "nemesis", on
our own processes. docs/reliability.md, "The nemesis", says what it
promises and how to run it short and long.

    nemesis.py --seed N [options]         one run
    nemesis.py --seeds A-B [options]      one run per seed (each its own
                                          process), a line each, totals
    nemesis.py --seed N --dry-run         print the plan, start nothing

Exit status: 0 no violation; 1 a violation found (of brim's promises, or
the run proved too little: see --min-strike-ratio); 2 bad usage; 3 the
harness could not run (a daemon would not start, a tool is missing).
Modules: plan.py (every decision, from the seed), cluster.py (processes,
wire calls, TCP resets), faults.py (the menu), load.py (data, bench),
checks.py (the end-of-run checks).
"""

import argparse
import datetime
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checks  # noqa: E402
import driver  # noqa: E402
import faults  # noqa: E402
import plan as planmod  # noqa: E402
from cluster import Cluster  # noqa: E402
from load import Bench, Dataset, import_file  # noqa: E402

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE, EXIT_HARNESS = 0, 1, 2, 3


class Stop(Exception):
    """The sequence of changes cannot go on (a violation says why)."""


class Run:
    """One seeded run: the plan, the cluster, the event log, what was
    observed and the violations found."""

    def __init__(self, args, plan):
        self.a = args
        self.plan = plan
        self.t0 = time.monotonic()
        self.dir = tempfile.mkdtemp(prefix="brim-nemesis-%d-" % args.seed,
                                    dir=args.dir)
        self.events = open(os.path.join(self.dir, "events.log"), "w")
        self.lock = threading.Lock()
        self.violations = []
        self.faults = []            # fault records (faults.strike)
        self.killed = set()
        self.kill_times = []        # time.monotonic() of each node kill
        self.kill_partitions = set()
        self.datasets = []
        self.maps = {}              # epoch -> topology, as first seen
        self.last_stats = {}        # node -> its last STATS
        self.progress = (None, time.monotonic())
        self.coord_fault = False
        self.final_topo = None
        self.records_checked = 0
        self.records_missing = 0
        self.records_bad = 0        # missing, different or unreadable
        self.warn_groups = {}
        self.migrations = []        # (step, seconds from commit to settled)
        self.steps_done = 0
        self.cl = None
        self.bench = None
        self.monitor_stop = threading.Event()
        self.broken = None          # why the changes cannot go on

    # ---- the event log ----

    def elapsed(self):
        return time.monotonic() - self.t0

    def log(self, msg):
        now = datetime.datetime.now(datetime.timezone.utc)
        line = "%s +%7.3fs %s" % (now.strftime("%H:%M:%S.%f")[:-3],
                                  self.elapsed(), msg)
        with self.lock:
            print(line, flush=True)
            self.events.write(line + "\n")
            self.events.flush()

    def violation(self, msg):
        with self.lock:
            self.violations.append(msg)
        self.log("VIOLATION: " + msg)

    # ---- what the run expects and has seen ----

    def expected_members(self):
        """Nodes that should be members now: running, not leaving."""
        return [n.name for n in self.cl.nodes.values()
                if n.proc.alive() and not n.proc.expected_exit]

    def prev_map(self, epoch):
        older = [e for e in self.maps if e < epoch]
        return self.maps[max(older)] if older else None

    def owner_history(self, p):
        out, last = [], None
        for e in sorted(self.maps):
            t = self.maps[e]
            o = t["owner"][p]
            name = t["members"][o] if o < len(t["members"]) else "-"
            if name != last:
                out.append("e%d:%s" % (e, name))
                last = name
        return " ".join(out)

    # ---- the monitor thread ----

    def monitor(self):
        """Every 0.5 s: each node's STATS, the committed map, and any
        process that exited when it should not have."""
        while not self.monitor_stop.wait(0.5):
            try:
                self._monitor_once()
            except Exception as e:          # never let it die silently
                self.log("monitor: %r" % e)

    def _monitor_once(self):
        cl = self.cl
        prog = 0
        for n in list(cl.nodes.values()):
            if n.proc.alive() and not n.proc.paused:
                st = n.stats()
                if st is not None:
                    self.last_stats[n.name] = st
            st = self.last_stats.get(n.name, {})
            prog += sum(st.get(k, 0) for k in (
                "mig_keys_in", "mig_keys_out", "mig_partitions_in_done",
                "mig_partitions_out_done", "mig_partitions_out_dropped"))
            if not n.proc.alive() and not n.proc.expected_exit:
                n.proc.expected_exit = True
                n.judged = True
                self.broken = "%s exited by itself" % n.name
                self.violation("%s exited by itself (status %s): %s" % (
                    n.name, n.proc.proc.returncode, " | ".join(
                        x[24:] for x in n.proc.tail(40)
                        if " W " in x or " E " in x)[-400:]))
        if not self.coord_fault:
            if not cl.coord.alive() and not cl.coord.expected_exit:
                cl.coord.expected_exit = True
                self.broken = "brim-coord exited by itself"
                self.violation("brim-coord exited by itself (status %s): %s"
                               % (cl.coord.proc.returncode,
                                  " | ".join(cl.coord.tail(3))))
            t = cl.topo(timeout=0.5)
            if t is not None:
                if t["epoch"] not in self.maps:
                    self.maps[t["epoch"]] = t
                prog += t["epoch"] * 1000003
        if prog != self.progress[0]:
            self.progress = (prog, time.monotonic())

    # ---- membership changes ----

    def wait_commit(self, step, timeout):
        """Until the committed map has the step's change in it."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_broken()
            t = self.cl.topo()
            if t is not None and t["epoch"] > 0:
                self.maps.setdefault(t["epoch"], t)
                inside = step.name in t["members"]
                if inside == (step.kind == "join"):
                    return t
            if time.monotonic() > deadline:
                raise Stop(self.violation_stop(
                    "step %d (%s %s): no epoch with the change committed "
                    "within %.0f s" % (step.index, step.kind, step.name,
                                       timeout)))
            time.sleep(0.1)

    def check_broken(self):
        if self.broken:
            raise Stop(self.broken)

    def violation_stop(self, msg):
        self.violation(msg)
        return msg

    def settled(self):
        """None when the cluster is at rest, else why not."""
        cl = self.cl
        cs = cl.cluster_stats()
        if cs is None:
            return "the coordinator does not answer"
        if cs.get("pending"):
            return "an epoch is pending"
        if cs.get("migration", {}).get("active"):
            pass                        # checked through the nodes below
        want = sorted(self.expected_members())
        got = sorted(n["name"] for n in cs.get("nodes", []))
        if got != want:
            return "members %s, expected %s" % (got, want)
        for n in cl.nodes.values():
            if n.proc.alive() and n.proc.expected_exit and \
                    n.name not in self.killed:
                return "%s has not exited yet" % n.name
        busy = {}
        for name in want:
            st = cl.nodes[name].stats()
            if st is None:
                return "%s does not answer STATS" % name
            if st.get("committed_epoch") != cs.get("epoch"):
                return "%s at epoch %s, the cluster at %s" % (
                    name, st.get("committed_epoch"), cs.get("epoch"))
            i, o = (st.get("mig_partitions_in_flight", 0),
                    st.get("mig_partitions_out_pending", 0))
            if i or o:
                busy[name] = (i, o)
        if busy:
            return "partitions (in flight, out pending): %s" % busy
        if cs.get("migration", {}).get("active"):
            return "migration.active"
        return None

    def wait_settled(self, what, est_s):
        """Until settled(); a violation when nothing moves for --stuck-s
        or it takes past the bound (3 x the estimate + 90 s)."""
        t0 = time.monotonic()
        bound = 3 * est_s + 90
        why = None
        while True:
            self.check_broken()
            why = self.settled()
            if why is None:
                return time.monotonic() - t0
            idle = time.monotonic() - self.progress[1]
            if idle > self.a.stuck_s:
                raise Stop(self.violation_stop(
                    "%s: no migration progress for %.0f s: %s"
                    % (what, idle, why)))
            if time.monotonic() - t0 > bound:
                raise Stop(self.violation_stop(
                    "%s: not settled after %.0f s: %s"
                    % (what, bound, why)))
            time.sleep(0.25)

    def request(self, step):
        cl = self.cl
        if step.kind == "join":
            n = cl.start_node(step.node)
            self.log("step %d: join %s at %s (pid %d, %d MB/s, weight %g)"
                     % (step.index, n.name, n.addr, n.proc.pid,
                        step.node.pace, step.node.weight))
            return
        n = cl.nodes[step.name]
        n.proc.expected_exit = True
        if step.method == "term":
            self.log("step %d: leave %s by SIGTERM (pid %d)"
                     % (step.index, n.name, n.proc.pid))
            n.proc.send(signal.SIGTERM)
            return
        self.log("step %d: brimctl leave %s" % (step.index, n.name))
        rc, out, err = cl.brimctl("leave", step.name, timeout=30)
        if rc != 0:
            raise Stop(self.violation_stop(
                "brimctl leave %s failed (exit %d): %s"
                % (step.name, rc, (err or out).strip()[:200])))

    def do_step(self, step, prev):
        if prev is not None and prev.back_to_back:
            total, per = self.cl.in_flight()
            rec = {"kind": "back_to_back", "step": step.index,
                   "victim": None, "at_s": self.elapsed(), "skipped": None,
                   "in_flight": total, "per_node": per,
                   "detail": "asked while step %d streams" % prev.index}
            self.record(rec)
        self.check_broken()
        t_req = time.monotonic()
        self.request(step)
        wait = 90 + (1.5 * prev.est_s if prev is not None and
                     prev.back_to_back else 0)
        t = self.wait_commit(step, wait)
        t_commit = time.monotonic()
        total, per = self.cl.in_flight()
        self.log("step %d: epoch %d committed %.1f s after the request: "
                 "members %s; in flight %d %s"
                 % (step.index, t["epoch"], t_commit - t_req,
                    ",".join(t["members"]), total, _per(per)))
        for f in step.faults:
            left = t_commit + f.delay_s - time.monotonic()
            if left > 0:
                time.sleep(left)
            self.check_broken()
            rec = faults.strike(self, step, f)
            self.record(rec)
        self.steps_done += 1
        if step.back_to_back:
            return
        self.wait_settled("step %d" % step.index, step.est_s)
        mig = time.monotonic() - t_commit
        self.migrations.append((step.index, mig))
        self.log("step %d: settled %.1f s after its commit (estimate %.0f s)"
                 % (step.index, mig, step.est_s))
        self.check_leavers()
        time.sleep(self.a.gap_s)

    def check_leavers(self):
        for n in self.cl.nodes.values():
            if n.proc.expected_exit and not n.proc.alive() and \
                    n.name not in self.killed and not getattr(n, "judged",
                                                              False):
                n.judged = True
                rc = n.proc.proc.returncode
                self.log("%s exited with status %s" % (n.name, rc))
                tail = n.proc.tail(40)
                if rc == 1 and self.killed and any(
                        "their new owners died" in x for x in tail):
                    # reliability.md section 4: the partitions streaming
                    # to a receiver that dies are lost whole, and a leaver
                    # says so with status 1. Their keys are judged by the
                    # records check (kill_partitions).
                    self.log("%s exited 1 as a leave whose receiver was "
                             "killed must: %s" % (n.name, " | ".join(
                                 x[24:] for x in tail
                                 if "their new owners died" in x)))
                    continue
                if rc != 0:
                    self.violation("%s left with exit status %s: %s" % (
                        n.name, rc, " | ".join(
                            x[24:] for x in n.proc.tail(40)
                            if " W " in x or " E " in x)[-600:]))

    def record(self, rec):
        self.faults.append(rec)
        if rec["skipped"]:
            self.log("fault %s skipped: %s" % (rec["kind"], rec["skipped"]))
            return
        self.log("fault %s%s struck; partitions in flight %d %s; %s"
                 % (rec["kind"], " " + rec["victim"] if rec["victim"]
                    else "", rec["in_flight"], _per(rec["per_node"]),
                    rec["detail"]))

    # ---- the whole run ----

    def execute(self):
        a, p = self.a, self.plan
        self.log("seed %d: brim nemesis run in %s" % (a.seed, self.dir))
        for line in p.lines():
            self.log("plan: " + line)
        self.cl = Cluster(a.bin, self.dir, p, a, self.log)
        self.cl.start_coord()
        for name in p.initial:
            self.cl.start_node(p.nodes[name])
        deadline = time.monotonic() + 30
        while True:
            t = self.cl.topo()
            if t and sorted(t["members"]) == sorted(p.initial):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("the first epoch with %s was not "
                                   "committed within 30 s" % p.initial)
            time.sleep(0.1)
        self.log("epoch %d committed: %s" % (t["epoch"],
                                             ",".join(t["members"])))
        threading.Thread(target=self.monitor, daemon=True).start()
        ds = Dataset(os.path.join(self.dir, "data.jsonl"),
                     "nem%d:" % a.seed, p.record_sizes, a.seed)
        ds.write()
        self.datasets.append(ds)
        rc, line = import_file(self.cl, ds)
        self.log("brimctl import: exit %d: %s" % (rc, line))
        if rc != 0:
            raise RuntimeError("brimctl import failed before any fault: %s"
                               % line)
        self.bench = Bench(self.cl, p, a, self.log,
                           last_kill=lambda: (self.kill_times[-1]
                                              if self.kill_times else None))
        self.bench.start()
        time.sleep(2.0)
        prev = None
        stopped = False
        try:
            for step in p.steps:
                if self.elapsed() > a.max_seconds:
                    self.violation("time budget (--max-seconds %d) used up "
                                   "after %d changes" % (a.max_seconds,
                                                         self.steps_done))
                    break
                self.do_step(step, prev)
                prev = step
            if prev is not None and prev.back_to_back:
                self.wait_settled("last step", prev.est_s)
        except Stop as e:
            stopped = True
            self.log("changes stopped: %s" % e)
        self.bench.stop()
        self.log("changes over (%d of %d done); settling, then the checks "
                 "(bench segment ends in %.0f s)"
                 % (self.steps_done, len(p.steps),
                    self.bench.remaining_s()))
        if not stopped:     # a stopped run has said why already
            try:
                self.wait_settled("the end", 30)
            except Stop:
                pass
        self.check_leavers()
        cs = checks.final(self)
        if not self.bench.join(a.segment_s + 120):
            self.bench.kill()
            self.violation("brim-bench did not end in time")
        checks._bench(self)
        return cs

    def close(self):
        self.monitor_stop.set()
        if self.bench is not None:
            self.bench.stop()
            self.bench.kill()
        if self.cl is not None:
            self.cl.close()


def _per(per):
    return "(%s)" % " ".join("%s:%s" % (k, "?" if v is None else v)
                             for k, v in sorted(per.items()))


def summary(run, harness_error):
    """The run's figures, as the driver wants them."""
    kinds = {}
    for f in run.faults:
        k = kinds.setdefault(f["kind"], [0, 0, 0])
        if f["skipped"]:
            k[2] += 1
            continue
        k[0] += 1
        k[1] += 1 if f["in_flight"] else 0
    if any(n.spec.slow for n in (run.cl.nodes.values() if run.cl else [])):
        kinds.setdefault("slow", [0, 0, 0])[0] += 1
    b = run.bench.results if run.bench else []
    return {
        "seed": run.a.seed, "dir": run.dir,
        "result": "error" if harness_error else
        ("fail" if run.violations else "pass"),
        "harness_error": harness_error,
        "violations": run.violations,
        "changes": run.steps_done, "planned": len(run.plan.steps),
        "profile": run.plan.profile,
        "faults": kinds,
        "reads_checked": sum(r.get("reads_checked") or 0 for r in b),
        "writes": sum(r.get("sets", 0) + r.get("dels", 0) for r in b),
        "bench_ops": sum(r.get("ops", 0) for r in b),
        "lost": sum(r.get("lost") or 0 for r in b),
        "stale": sum(r.get("stale") or 0 for r in b),
        "errors": sum(r.get("errors") or 0 for r in b),
        "records_checked": run.records_checked,
        "records_missing": run.records_missing,
        "records_bad": run.records_bad,
        "migrations_s": [round(m, 1) for _, m in run.migrations],
        "killed": sorted(run.killed),
        "duration_s": round(run.elapsed(), 1),
    }


def print_report(run, s):
    run.log("---- report, seed %d ----" % run.a.seed)
    for k, (n, st, sk) in sorted(s["faults"].items()):
        if k in planmod.CONFIG_FAULTS:
            run.log("fault %-17s %2d (a node's configuration, not an event)"
                    % (k, n))
            continue
        run.log("fault %-17s %2d injected, %2d while partitions were in "
                "flight%s" % (k, n, st, ", %d skipped" % sk if sk else ""))
    if s["migrations_s"]:
        ms = sorted(s["migrations_s"])
        run.log("migrations (commit to settled, s): %s; median %.1f"
                % (" ".join("%.1f" % m for m in s["migrations_s"]),
                   ms[len(ms) // 2]))
    run.log("bench: %d ops, %d writes, %d reads checked; lost=%d stale=%d "
            "errors=%d%s" % (s["bench_ops"], s["writes"], s["reads_checked"],
                             s["lost"], s["stale"], s["errors"],
                             " (lost not judged: a node was killed)"
                             if run.killed else ""))
    run.log("imported records checked: %d, missing %d, missing, different or "
            "unreadable %d" % (s["records_checked"], s["records_missing"],
                               s["records_bad"]))
    for (src, lvl, msg), c in sorted(run.warn_groups.items(),
                                     key=lambda x: -x[1])[:14]:
        run.log("log %s %s x%d: %s" % (src, lvl, c, msg))
    for v in run.violations:
        run.log("VIOLATION: " + v)
    run.log("seed %d: %s, %d violations, %.0f s; replay: %s" % (
        run.a.seed, s["result"].upper(), len(run.violations),
        s["duration_s"], replay_cmd(run.a)))


def replay_cmd(a):
    return " ".join([os.path.relpath(__file__)] + a.passthrough +
                    ["--seed", str(a.seed)])


def run_one(args):
    p = planmod.Planner(args).build()
    if args.dry_run:
        for line in p.lines():
            print(line)
        return EXIT_OK
    run = Run(args, p)
    err = None

    def on_term(sig, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    try:
        run.execute()
    except KeyboardInterrupt:
        err = "interrupted"
        run.log("interrupted: stopping every process")
    except Exception as e:
        err = "%s: %s" % (type(e).__name__, e)
        run.log("harness error: %s\n%s" % (err, traceback.format_exc()))
    finally:
        run.close()
    s = summary(run, err)
    print_report(run, s)
    run.events.close()
    if args.summary_json:
        with open(args.summary_json, "w") as f:
            json.dump(s, f)
    keep = args.keep or (s["result"] != "pass" and not args.no_keep)
    for ds in run.datasets:
        try:
            os.unlink(ds.path)      # the data is regenerated from the seed
        except OSError:
            pass
    if keep:
        print("logs kept in %s" % run.dir)
    else:
        shutil.rmtree(run.dir, ignore_errors=True)
    if err == "interrupted":
        return 130
    if err:
        return EXIT_HARNESS
    return EXIT_VIOLATION if run.violations else EXIT_OK


# ---- the command line ----

def seed_range(s):
    try:
        lo, hi = (s.split("-", 1) + [None])[:2]
        lo = int(lo)
        hi = int(hi) if hi is not None else lo
    except ValueError:
        raise argparse.ArgumentTypeError("--seeds wants A-B, e.g. 1-20")
    if lo < 0 or hi < lo:
        raise argparse.ArgumentTypeError("--seeds wants A-B with 0 <= A <= B")
    return lo, hi


def positive(kind):
    def conv(s):
        v = kind(s)
        if v <= 0:
            raise argparse.ArgumentTypeError("must be above 0")
        return v
    return conv


def parser():
    ap = argparse.ArgumentParser(
        prog="nemesis.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="brim's randomized fault harness: one seeded run "
        "starts brim-coord and brim-nodes on loopback, imports a data set, "
        "keeps brim-bench --verify load on the cluster, makes a random "
        "sequence of joins and graceful leaves, injects faults while the "
        "partitions stream, and checks that no acknowledged write was lost "
        "and the cluster settled.",
        epilog="fault kinds (--faults): " + ", ".join(planmod.ALL_FAULTS) +
        "\n  coord_kill: SIGKILL brim-coord and restart it (same flags, "
        "same data dir)\n  coord_pause / coord_pause_long: SIGSTOP "
        "brim-coord for less / more than dead-after\n  pause_receiver / "
        "pause_sender: SIGSTOP a node receiving / sending partitions, less "
        "than dead-after\n  tcp_reset: ss -K the node-to-node connections "
        "(all, the receiver's or the sender's)\n  bigvals: import records "
        "whose values are exactly the value limit\n  back_to_back: ask for "
        "the next change while this one's migration runs\n  slow: one node "
        "paced at --slow-mb-per-s with weight --slow-weight joins and then "
        "leaves\n  node_kill: SIGKILL a sender or receiver (only with "
        "--node-kill)\n\nexit status: 0 no violation, 1 violation found, "
        "2 bad usage, 3 the harness could not run.\n"
        "docs/reliability.md, \"The nemesis\", has the short and the long "
        "run.")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--seed", type=int, help="run this one seed")
    g.add_argument("--seeds", type=seed_range, metavar="A-B",
                   help="run seeds A to B, each in its own process; one "
                   "summary line per seed, then totals")
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "..", "build",
                                                  "bin"),
                    help="directory of brim-coord, brim-node, brimctl and "
                    "brim-bench (default: build/bin of this tree)")
    ap.add_argument("--dir", default=None, help="make the run's directory "
                    "(logs, state, data) under DIR (default $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep the run's "
                    "directory even when it passed")
    ap.add_argument("--no-keep", action="store_true", help="remove it even "
                    "when it failed")
    ap.add_argument("--dry-run", action="store_true", help="print the plan "
                    "of --seed and exit")
    ap.add_argument("--summary-json", metavar="FILE", help="write the run's "
                    "summary as JSON to FILE")
    ap.add_argument("--changes", type=positive(int), default=8,
                    help="membership changes per run (default 8, at least 8 "
                    "for a run that counts)")
    ap.add_argument("--nodes", type=positive(int), default=3,
                    help="members at the start (default 3)")
    ap.add_argument("--min-members", type=positive(int), default=2,
                    help="never fewer members than this (default 2)")
    ap.add_argument("--max-members", type=positive(int), default=4,
                    help="never more members than this (default 4)")
    ap.add_argument("--faults", default="all", metavar="LIST",
                    help="fault kinds to draw from: all (default; all but "
                    "node_kill), a comma list, or -kind,... to leave kinds "
                    "out of all")
    ap.add_argument("--faults-per-change", default="1,1,2,2,3",
                    metavar="N,N,...", help="how many faults a change gets, "
                    "drawn from this list (default 1,1,2,2,3)")
    ap.add_argument("--node-kill", action="store_true", help="also SIGKILL "
                    "nodes (then bench lost is not judged; imported records "
                    "may be lost only in partitions the killed node owned "
                    "or streamed)")
    ap.add_argument("--values", default="random",
                    choices=["random", "small", "mixed", "big"],
                    help="bench value profile: small 100-4096 B, mixed up to "
                    "128 KiB, big 256 KiB to the 1 MiB limit (default: drawn "
                    "from the seed)")
    ap.add_argument("--pace-mb-per-s", type=positive(int), default=3,
                    help="--migrate-mb-per-s of the nodes (default 3)")
    ap.add_argument("--slow-mb-per-s", type=positive(int), default=1,
                    help="--migrate-mb-per-s of a slow node (default 1)")
    ap.add_argument("--slow-weight", type=float, default=1.5,
                    help="--weight of a slow node (default 1.5)")
    ap.add_argument("--slow-prob", type=float, default=0.5,
                    help="chance that a run has a slow node (default 0.5)")
    ap.add_argument("--b2b-prob", type=float, default=0.25,
                    help="chance that a change is followed back to back "
                    "(default 0.25; twice that after a slow node's leave)")
    ap.add_argument("--min-migration-s", type=float, default=5.0,
                    help="size the data so that the shortest change streams "
                    "this long at --pace-mb-per-s (default 5)")
    ap.add_argument("--partitions", type=positive(int), default=1024,
                    help="P (default 1024)")
    ap.add_argument("--dead-after-ms", type=positive(int), default=3000,
                    help="brim-coord --dead-after-ms (default 3000); node "
                    "pauses stay 1.2 s below it")
    ap.add_argument("--max-value-bytes", type=positive(int),
                    default=1048576, help="the nodes' value limit, the size "
                    "of bigvals records (default 1048576)")
    ap.add_argument("--segment-s", type=positive(int), default=30,
                    help="brim-bench runs in segments this long, one after "
                    "the other (default 30)")
    ap.add_argument("--bench-timeout-ms", type=positive(int), default=10000,
                    help="brim-bench --timeout (default 10000)")
    ap.add_argument("--stuck-s", type=positive(float), default=25.0,
                    help="a migration that makes no progress this long is a "
                    "violation and ends the changes (default 25)")
    ap.add_argument("--gap-s", type=float, default=1.0,
                    help="pause between a settled change and the next "
                    "(default 1)")
    ap.add_argument("--max-seconds", type=positive(int), default=420,
                    help="no new change after this many seconds of the run "
                    "(default 420; the end is then a violation)")
    ap.add_argument("--min-strike-ratio", type=float, default=0.5,
                    help="fail the run when fewer than this share of its "
                    "faults struck while partitions were in flight (default "
                    "0.5)")
    return ap


def main(argv):
    ap = parser()
    args = ap.parse_args(argv)
    # What a replay must repeat: every option but the seed choice.
    pt, skip = [], False
    for i, x in enumerate(argv):
        if skip:
            skip = False
            continue
        if x in ("--seed", "--seeds", "--summary-json"):
            skip = True
            continue
        if x.startswith(("--seed=", "--seeds=", "--summary-json=")):
            continue
        pt.append(x)
    args.passthrough = pt
    try:
        args.fault_kinds = planmod.parse_faults(args.faults, args.node_kill)
        args.faults_per_change = [int(x) for x in
                                  args.faults_per_change.split(",")]
        if any(x < 0 for x in args.faults_per_change):
            raise ValueError("--faults-per-change: counts are 0 or more")
    except ValueError as e:
        ap.error(str(e))
    if not (2 <= args.min_members <= args.nodes <= args.max_members):
        ap.error("need 2 <= --min-members <= --nodes <= --max-members")
    if args.partitions & (args.partitions - 1):
        ap.error("--partitions must be a power of two")
    if args.seeds is not None:
        return driver.run_many(args, os.path.abspath(__file__))
    for b in ("brim-coord", "brim-node", "brimctl", "brim-bench"):
        if not os.access(os.path.join(args.bin, b), os.X_OK):
            ap.error("no %s in %s (build first, or give --bin)" % (b,
                                                                   args.bin))
    if "tcp_reset" in args.fault_kinds and (os.geteuid() != 0 or
                                            shutil.which("ss") is None):
        print("nemesis: tcp_reset needs root and ss (iproute2): left out",
              file=sys.stderr)
        args.fault_kinds.remove("tcp_reset")
    return run_one(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
