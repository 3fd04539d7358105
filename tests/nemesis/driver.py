"""driver.py - nemesis.py --seeds A-B: one run per seed, each in a process
of its own (its output in a file of its own), one summary line per seed
as it ends, then the totals: faults per kind and how many struck while
partitions were in flight, acknowledged writes and reads checked,
imported records checked, and the violations.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from cluster import die_with_parent


def run_many(args, script):
    lo, hi = args.seeds
    if args.dry_run:
        for seed in range(lo, hi + 1):
            subprocess.run([sys.executable, script, "--seed", str(seed)]
                           + args.passthrough, stdin=subprocess.DEVNULL)
        return 0
    totals = {}
    rows = []
    worst = 0
    for seed in range(lo, hi + 1):
        fd, path = tempfile.mkstemp(prefix="nemesis-%d-" % seed,
                                    suffix=".json")
        os.close(fd)
        cmd = [sys.executable, script, "--seed",
               str(seed), "--summary-json", path] + args.passthrough
        ofd, opath = tempfile.mkstemp(prefix="nemesis-seed-%d-" % seed,
                                      suffix=".out", dir=args.dir)
        log = os.fdopen(ofd, "w")
        t0 = time.monotonic()
        try:
            # The run dies with this driver (and its daemons with it).
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL,
                                preexec_fn=die_with_parent).returncode
        except KeyboardInterrupt:
            print("interrupted at seed %d" % seed)
            return 130
        log.close()
        try:
            with open(path) as f:
                s = json.load(f)
        except (OSError, ValueError):
            s = {"seed": seed, "result": "error", "violations": [],
                 "harness_error": "no summary (exit %d)" % rc,
                 "faults": {}}
        os.unlink(path)
        s["out"] = opath
        rows.append(s)
        worst = max(worst, rc if rc in (0, 1, 3) else 3)
        print(seed_line(s, time.monotonic() - t0), flush=True)
        for k, v in s.get("faults", {}).items():
            t = totals.setdefault(k, [0, 0, 0])
            for i in range(3):
                t[i] += v[i]
    print_totals(rows, totals)
    return worst


def seed_line(s, secs):
    f = s.get("faults", {})
    inj = sum(v[0] for k, v in f.items() if k != "slow")
    st = sum(v[1] for k, v in f.items() if k != "slow")
    head = "seed %-4d %-5s %4.0fs" % (s["seed"], s["result"].upper(), secs)
    if s["result"] == "error":
        return head + "  harness error: %s (output %s)" % (
            s.get("harness_error"), s.get("out"))
    line = ("%s  %s changes %d/%d  faults %d (%d in streams)  reads %d  "
            "writes %d  records %d/%d  lost=%d stale=%d errors=%d  "
            "violations %d" % (head, s.get("profile"), s["changes"],
                               s["planned"], inj, st, s["reads_checked"],
                               s["writes"],
                               s["records_checked"] - s.get("records_bad", 0),
                               s["records_checked"], s["lost"], s["stale"],
                               s["errors"], len(s["violations"])))
    for v in s["violations"][:4]:
        line += "\n      - " + v[:220]
    if len(s["violations"]) > 4:
        line += "\n      - ... %d more (%s)" % (len(s["violations"]) - 4,
                                                s.get("out"))
    return line


def print_totals(rows, totals):
    print("---- totals over %d seeds ----" % len(rows))
    for k, (n, st, sk) in sorted(totals.items()):
        print("  %-17s %4d injected, %4d while partitions were in flight%s"
              % (k, n, st, ", %d skipped" % sk if sk else ""))
    ok = [r for r in rows if r["result"] != "error"]
    print("  acknowledged writes %d, reads checked %d, imported records "
          "checked %d" % (sum(r["writes"] for r in ok),
                          sum(r["reads_checked"] for r in ok),
                          sum(r["records_checked"] for r in ok)))
    print("  seeds: %d pass, %d fail, %d harness errors; violations %d"
          % (sum(r["result"] == "pass" for r in rows),
             sum(r["result"] == "fail" for r in rows),
             sum(r["result"] == "error" for r in rows),
             sum(len(r["violations"]) for r in rows)))
    bad = [str(r["seed"]) for r in rows if r["result"] != "pass"]
    if bad:
        print("  failing seeds: %s" % " ".join(bad))
