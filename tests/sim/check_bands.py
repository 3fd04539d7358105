#!/usr/bin/env python3
"""Check brim-sim's figures against the acceptance bands.

Source of every band below: shared/cases/seed-figures.md ("Acceptance bands
(mean over 24 seeds)" for Model A, "Bands for the mean over 400 seeds" for
Model B), which in turn hold the published measurements brim starts from.
The rebalance checks come from the acceptance of the issue that added the
rebalance rule to brim-sim (DESIGN.md section 4).

usage:
  check_bands.py grid BRIM_SIM [--json FILE]    Model A, 200 nodes, 24 seeds
  check_bands.py spread BRIM_SIM [--json FILE]  Model B, 8 nodes, 400 seeds

BRIM_SIM is the brim-sim binary; it is run with the commands below unless
--json names a file already holding that command's output. Exit 0 when every
check passes, 1 otherwise (each failure is printed).
"""

import json
import subprocess
import sys

GRID_CMD = ["grid", "--nodes", "200", "--keys-per-node", "10,100,1000",
            "--tokens", "1,16,160", "--eps", "0.01,0.05,0.10,0.25,1.0",
            "--seeds", "24", "--rule", "both", "--format", "json",
            "--quiet"]
SPREAD_CMD = ["spread", "--nodes", "8", "--tokens", "1,10,25,100",
              "--seeds", "400", "--format", "json"]

# Model A bands: (tokens, keys per node, eps, metric, low, high).
# displaced is a fraction here (the source gives percent).
GRID_BANDS = [
    (160, 100, "1.0", "busiest", 1.329, 1.417),
    (160, 1000, "1.0", "busiest", 1.218, 1.289),
    (160, 100, "1.0", "churn_add", 0.891, 1.096),
    (160, 1000, "0.25", "busiest", 1.219, 1.260),
    (160, 100, "0.25", "displaced", 0.0009, 0.0024),
    (160, 100, "0.10", "displaced", 0.0162, 0.0208),
    (160, 1000, "0.10", "displaced", 0.0048, 0.0068),
    (160, 100, "0.10", "churn_add", 1.202, 1.432),
    (160, 1000, "0.10", "churn_add", 1.092, 1.239),
    (160, 1000, "0.10", "churn_remove", 1.086, 1.212),
    (160, 100, "0.05", "displaced", 0.0339, 0.0391),
    (160, 1000, "0.05", "displaced", 0.0159, 0.0203),
    (160, 100, "0.05", "churn_add", 1.553, 1.801),
    (160, 1000, "0.05", "churn_add", 1.357, 1.495),
    (160, 1000, "0.05", "churn_remove", 1.336, 1.502),
    (160, 100, "0.01", "displaced", 0.0590, 0.0645),
    (160, 1000, "0.01", "displaced", 0.0371, 0.0417),
    (160, 100, "0.01", "churn_add", 2.338, 2.791),
    (160, 1000, "0.01", "churn_add", 1.842, 1.950),
    (160, 1000, "0.01", "churn_remove", 1.943, 2.042),
    (16, 1000, "0.25", "displaced", 0.0218, 0.0310),
    (16, 1000, "0.05", "displaced", 0.0923, 0.1048),
    (16, 1000, "0.05", "churn_add", 2.226, 2.591),
    (16, 1000, "0.05", "churn_remove", 2.335, 2.705),
    (1, 1000, "0.25", "displaced", 0.321, 0.368),
    (1, 1000, "1.0", "displaced", 0.128, 0.178),
]

# Model B bands: (tokens, metric, low, high).
SPREAD_BANDS = [
    (10, "rel_spread", 0.268, 0.299),
    (100, "rel_spread", 0.0855, 0.0947),
    (1, "max_mean", 2.58, 2.86),
    (100, "max_mean", 1.136, 1.158),
]

# Rebalance acceptance: 200 nodes, 1000 keys per node, 160 tokens.
REBALANCE_CELL = (200, 1000, 160)
REBALANCE_ADD_MAX = (0.05, 1.25)    # churn_add <= 1.25 at eps 0.05
REBALANCE_BELOW_EPS = 0.10          # below replace at every eps <= 0.10


def load(binary, cmd, json_file):
    """The JSON array brim-sim prints for CMD (or read from JSON_FILE)."""
    if json_file is not None:
        with open(json_file, encoding="utf-8") as f:
            return json.load(f)
    out = subprocess.run([binary] + cmd, check=True, stdout=subprocess.PIPE)
    return json.loads(out.stdout)


class Checker:
    """Counts checks and prints each failure."""

    def __init__(self):
        self.ran = 0
        self.failed = 0

    def check(self, ok, what):
        self.ran += 1
        if not ok:
            self.failed += 1
            print("FAIL " + what)

    def band(self, value, low, high, what):
        self.check(low <= value <= high,
                   "%s = %.6g, band %.6g to %.6g" % (what, value, low, high))


def find(rows, **want):
    """The one row whose fields equal WANT."""
    hits = [r for r in rows if all(r[k] == v for k, v in want.items())]
    if len(hits) != 1:
        raise SystemExit("expected one row for %r, found %d" %
                         (want, len(hits)))
    return hits[0]


def check_grid(rows, c):
    for tokens, kpn, eps, metric, low, high in GRID_BANDS:
        r = find(rows, nodes=200, keys_per_node=kpn, tokens=tokens,
                 eps=eps, rule="replace")
        c.band(r[metric], low, high, "P=%d kpn=%d eps=%s %s" %
               (tokens, kpn, eps, metric))
    for r in rows:
        name = "P=%d kpn=%d eps=%s %s" % (r["tokens"], r["keys_per_node"],
                                          r["eps"], r["rule"])
        c.check(r["seeds"] == 24, name + ": seeds %d" % r["seeds"])
        c.check(r["busiest_exact_runs"] == r["binding_runs"],
                name + ": busiest_exact_runs %d != binding_runs %d" %
                (r["busiest_exact_runs"], r["binding_runs"]))
        c.check(r["over_cap_runs"] == 0,
                name + ": over_cap_runs %d" % r["over_cap_runs"])
        if r["rule"] == "rebalance":
            # A leave under rebalance moves the leaver's keys and no other.
            c.check(r["moved_remove_others"] == 0,
                    name + ": moved_remove_others %g" %
                    r["moved_remove_others"])
    n, kpn, tokens = REBALANCE_CELL
    for eps in ("0.01", "0.05", "0.10", "0.25", "1.0"):
        reb = find(rows, nodes=n, keys_per_node=kpn, tokens=tokens, eps=eps,
                   rule="rebalance")
        rep = find(rows, nodes=n, keys_per_node=kpn, tokens=tokens, eps=eps,
                   rule="replace")
        name = "rebalance P=%d kpn=%d eps=%s" % (tokens, kpn, eps)
        if float(eps) == REBALANCE_ADD_MAX[0]:
            c.check(reb["churn_add"] <= REBALANCE_ADD_MAX[1],
                    name + ": churn_add %.4f > %.2f" %
                    (reb["churn_add"], REBALANCE_ADD_MAX[1]))
        if float(eps) <= REBALANCE_BELOW_EPS:
            for m in ("churn_add", "churn_remove"):
                c.check(reb[m] < rep[m], name + ": %s %.4f not below "
                        "replace's %.4f" % (m, reb[m], rep[m]))


def check_spread(rows, c):
    for tokens, metric, low, high in SPREAD_BANDS:
        r = find(rows, nodes=8, tokens=tokens)
        c.check(r["seeds"] == 400, "V=%d: seeds %d" % (tokens, r["seeds"]))
        c.band(r[metric], low, high, "V=%d %s" % (tokens, metric))


def main(argv):
    if len(argv) not in (3, 5) or argv[1] not in ("grid", "spread") \
            or (len(argv) == 5 and argv[3] != "--json"):
        print(__doc__, file=sys.stderr)
        return 2
    json_file = argv[4] if len(argv) == 5 else None
    c = Checker()
    if argv[1] == "grid":
        check_grid(load(argv[2], GRID_CMD, json_file), c)
    else:
        check_spread(load(argv[2], SPREAD_CMD, json_file), c)
    print("%s: %d checks, %d failed" % (argv[1], c.ran, c.failed))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
