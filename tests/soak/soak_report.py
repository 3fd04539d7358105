#!/usr/bin/env python3
"""tests/soak/soak_report.py - the figures and checks of a soak run
(tests/soak/soak.sh writes DIR; this reads it and prints).

    soak_report.py DIR

DIR holds run.tsv (the settings), segments.jsonl (one brim-bench --json
result per minute, with the segment's start and end in ms from the first
segment's start), events.tsv (ms, event, name, rc, detail: add-node,
remove-node, kill, restart, rejoined) and rss.tsv (ms, tag, process, pid,
VmRSS KiB; tags start, mK, mK.end, end).

Checks (exit 1 when one fails):
  - every minute's bench produced a result;
  - every join and leave of the driver succeeded, and the kill, the
    restart and the rejoin happened;
  - stale = 0 in every minute;
  - lost = 0 in every minute but the one with the kill (the bench cannot
    tell which keys were on the killed node; that minute's lost is
    printed apart);
  - errors = 0 in every minute but the one with the kill (a graceful join
    or leave surfaces no error);
  - every node's RSS, in every sample, <= --memory-mb + 32 MiB;
  - the coordinator's RSS after the first minute <= 1.10 x its RSS at the
    end of the first minute;
  - the bench's RSS near the end of each later minute <= 1.10 x its RSS
    near the end of the first (the bench is a new process each minute, so
    this compares like runs; its growth within a minute is printed too).
"""
import json
import os
import sys

SLACK_KIB = 32 * 1024
GROWTH = 1.10


def read_tsv(path, ncols):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t", ncols - 1)
            if len(parts) == ncols:
                rows.append(parts)
    return rows


def mib(kib):
    return "%.1f" % (kib / 1024.0)


class Report:
    def __init__(self, d):
        self.dir = d
        self.run = dict(read_tsv(os.path.join(d, "run.tsv"), 2))
        self.minutes = int(self.run.get("minutes", "0"))
        self.memory_mb = int(self.run.get("memory_mb", "0"))
        self.segs = []
        path = os.path.join(d, "segments.jsonl")
        if os.path.exists(path):
            with open(path) as f:
                self.segs = [json.loads(ln) for ln in f if ln.strip()]
        self.events = [(int(t), e, n, rc, det) for t, e, n, rc, det in
                       read_tsv(os.path.join(d, "events.tsv"), 5)]
        self.rss = [(int(t), tag, p, int(pid), int(kib)) for t, tag, p, pid,
                    kib in read_tsv(os.path.join(d, "rss.tsv"), 5)]
        self.checks = []

    def check(self, ok, what):
        self.checks.append((bool(ok), what))

    def kill_segment(self):
        """The minute whose window holds the kill (or the first one that
        starts after it), or None."""
        kills = [t for t, e, _, rc, _ in self.events if e == "kill"
                 and rc == "0"]
        if not kills:
            return None
        for s in self.segs:
            if s["start_ms"] <= kills[0] <= s["end_ms"] or \
                    s["start_ms"] > kills[0]:
                return s["segment"]
        return None

    def events_in(self, s):
        out = []
        for t, e, n, rc, _ in self.events:
            if rc == "start" or not s["start_ms"] <= t <= s["end_ms"]:
                continue
            short = {"add-node": "+", "remove-node": "-", "kill": "kill ",
                     "restart": "restart ", "rejoined": "rejoined "}
            if e in ("restart", "rejoined"):
                continue
            out.append("%s%s@%.0f%s" % (short.get(e, e), n, t / 1000.0,
                                        "" if rc == "0" else "(rc %s)" % rc))
        return " ".join(out)

    def print_events(self):
        print("\nevents (s from the first minute's start):")
        for t, e, n, rc, det in self.events:
            if rc == "start":
                continue
            print("  %7.1f  %-11s %-6s rc=%s  %s" % (t / 1000.0, e, n, rc,
                                                   det[:110]))

    def print_minutes(self, ks):
        print("\nper minute (latency in microseconds; * = the minute with "
              "the kill):")
        hdr = ("min", "window s", "ops/s", "p50", "p99", "p99.9", "max",
               "lost", "stale", "errors", "epochs", "events")
        fmt = "%-4s %-13s %8s %7s %7s %8s %9s %6s %6s %6s %8s  %s"
        print(fmt % hdr)
        for s in self.segs:
            b = s["bench"] or {}
            mark = "*" if s["segment"] == ks else ""
            if not b:
                print(fmt % ("%d%s" % (s["segment"], mark), "", "-", "-", "-",
                             "-", "-", "-", "-", "-", "-",
                             "no result (exit %d)" % s["rc"]))
                continue
            print(fmt % ("%d%s" % (s["segment"], mark),
                         "%.0f-%.0f" % (s["start_ms"] / 1000.0,
                                        s["end_ms"] / 1000.0),
                         "%.0f" % b["ops_per_sec"], "%.0f" % b["p50_us"],
                         "%.0f" % b["p99_us"], "%.0f" % b["p999_us"],
                         "%.0f" % b["max_us"], b["lost"], b["stale"],
                         b["errors"],
                         "%d-%d" % (b["epoch_first"], b["epoch_last"]),
                         self.events_in(s)))

    def per_process(self):
        """{process: [(ms, tag, pid, kib)]} in time order."""
        out = {}
        for t, tag, p, pid, kib in self.rss:
            out.setdefault(p, []).append((t, tag, pid, kib))
        return out

    def print_rss(self, procs):
        bound = self.memory_mb * 1024 + SLACK_KIB
        print("\nresident memory, MiB (VmRSS every 5 s; node bound "
              "--memory-mb %d + 32 = %d):" % (self.memory_mb, bound // 1024))
        fmt = "%-8s %-22s %8s %8s %8s"
        print(fmt % ("process", "pids", "start", "end", "max"))
        for p in sorted(procs, key=lambda x: (x != "coord", x != "bench", x)):
            s = procs[p]
            pids = []
            for _, _, pid, _ in s:
                if pid not in pids:
                    pids.append(pid)
            shown = (" ".join(map(str, pids)) if len(pids) <= 3 else
                     "%d runs" % len(pids))
            print(fmt % (p, shown, mib(s[0][3]), mib(s[-1][3]),
                         mib(max(x[3] for x in s))))
        bench = self.bench_by_segment(procs)
        if bench:
            print("bench per minute, MiB (first sample, last sample):  " +
                  "  ".join("%d: %s -> %s" % (k, mib(a), mib(b))
                            for k, (a, b) in sorted(bench.items())))

    def bench_by_segment(self, procs):
        """{segment: (first kib, last kib)} of the bench."""
        out = {}
        for _, tag, _, kib in procs.get("bench", []):
            k = int(tag[1:].split(".")[0]) if tag.startswith("m") else 0
            if k:
                first = out.get(k, (kib, kib))[0]
                out[k] = (first, kib)
        return out

    def run_checks(self, ks, procs):
        self.check(len(self.segs) == self.minutes and
                   all(s["bench"] for s in self.segs),
                   "a bench result for each of %d minutes (got %d)" %
                   (self.minutes, sum(1 for s in self.segs if s["bench"])))
        changes = [(e, rc) for _, e, _, rc, _ in self.events
                   if e in ("add-node", "remove-node") and rc != "start"]
        bad = [c for c in changes if c[1] != "0"]
        self.check(changes and not bad, "every join and leave succeeded "
                   "(%d done, %d failed)" % (len(changes), len(bad)))
        for what in ("kill", "restart", "rejoined"):
            rcs = [rc for _, e, _, rc, _ in self.events if e == what]
            self.check(rcs == ["0"], "%s of %s happened once" %
                       (what, self.run.get("victim")))
        for s in self.segs:
            b = s["bench"]
            if not b:
                continue
            k = s["segment"]
            self.check(b["stale"] == 0, "minute %d: stale=%d" % (k,
                                                                b["stale"]))
            if k == ks:
                print("\nminute %d (the kill of %s): lost=%d keys (%d reads),"
                      " errors=%d: keys the killed node held, not judged"
                      % (k, self.run.get("victim"), b["lost"],
                         b["lost_reads"], b["errors"]))
                continue
            self.check(b["lost"] == 0, "minute %d: lost=%d" % (k, b["lost"]))
            self.check(b["errors"] == 0, "minute %d: errors=%d" %
                       (k, b["errors"]))
        bound = self.memory_mb * 1024 + SLACK_KIB
        for p, s in sorted(procs.items()):
            if p.startswith("node"):
                worst = max(x[3] for x in s)
                self.check(worst <= bound, "%s: RSS max %s MiB <= %s MiB" %
                           (p, mib(worst), mib(bound)))
        coord = procs.get("coord", [])
        base = [x[3] for x in coord if x[1] == "m1.end"]
        later = [x[3] for x in coord if x[1] not in ("start", "m1", "m1.end")]
        if base and later:
            self.check(max(later) <= GROWTH * base[0],
                       "coord: RSS after minute 1 max %s MiB <= 1.10 x %s MiB"
                       % (mib(max(later)), mib(base[0])))
        bench = self.bench_by_segment(procs)
        if 1 in bench and len(bench) > 1:
            worst = max(v[1] for k, v in bench.items() if k > 1)
            self.check(worst <= GROWTH * bench[1][1],
                       "bench: RSS at the end of minutes 2..%d max %s MiB <= "
                       "1.10 x minute 1's %s MiB" % (max(bench), mib(worst),
                                                     mib(bench[1][1])))

    def main(self):
        print("soak: %s minute(s); bench: %s" % (self.run.get("minutes"),
                                                 self.run.get("bench")))
        ks = self.kill_segment()
        procs = self.per_process()
        self.print_events()
        self.print_minutes(ks)
        self.print_rss(procs)
        self.run_checks(ks, procs)
        print("\nchecks:")
        for ok, what in self.checks:
            print("  %s  %s" % ("ok  " if ok else "FAIL", what))
        failed = sum(1 for ok, _ in self.checks if not ok)
        print("\nsoak: %s (%d checks, %d failed)" %
              ("PASS" if failed == 0 else "FAIL", len(self.checks), failed))
        return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: soak_report.py DIR\n")
        sys.exit(2)
    sys.exit(Report(sys.argv[1]).main())
