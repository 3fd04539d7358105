#!/usr/bin/python3
"""Draw brim-sim's figures beside the published ones (PNG, matplotlib).

usage:
  sim_plots.py grid   --out FILE.png [--nodes N] [JSON ...]
  sim_plots.py spread --out FILE.png [JSON ...]

JSON is what `brim-sim grid|spread --format json` prints; with no JSON
argument, or "-", it is read from stdin. A file may hold several JSON
arrays one after another (the output of several brim-sim runs), and their
rows are pooled.

grid    Model A: displaced, churn_add and churn_remove against eps (log
        scales), one row of panels per keys-per-node value, one colour per
        token count P; solid lines are the replace rule (the published
        model), dashed ones the rebalance rule (the live cluster). Large
        hollow diamonds are the published figures. Rows whose eps is
        "none" are left out (no place on an eps axis), and so is a
        displaced of 0 (no place on a log axis). The input may hold one
        node count only, or --nodes picks one.
spread  Model B: max/mean share and relative spread against V. brim-sim's
        points are grouped by their seed count (e.g. 400 seeds beside 8,
        the published figures' count), drawn with the theory: shares are
        Dirichlet(V, ..., V), so max/mean = E[max of N Gamma(V)] / V
        (H_N at V = 1) and the RMS relative spread is sqrt((N-1)/(NV+1)),
        next to the published rate 1/sqrt(V).

Exit status: 0 when the PNG is written, 1 on bad input (the message names
the source, the row and the field), 2 on a bad command line.
"""

import argparse
import json
import math
import sys

# The published figures, from shared/cases/seed-figures.md (means over 6
# seeds at N = 200 for Model A, over 8 seeds at N = 8 for Model B).
# Model A: (P, keys per node, eps) -> {metric: value}; displaced is a
# fraction. Table A is P = 160; Table B is 1,000 keys per node. Table B's
# row P = 160, eps 0.05 repeats Table A's to fewer digits and is left out.
PUB_NODES = 200
PUB_GRID = {
    (160, 100, 1.0): {"displaced": 0.0, "churn_add": 0.98},
    (160, 100, 0.25): {"displaced": 0.0018, "churn_add": 1.01},
    (160, 100, 0.10): {"displaced": 0.019, "churn_add": 1.32},
    (160, 100, 0.05): {"displaced": 0.037, "churn_add": 1.68},
    (160, 100, 0.01): {"displaced": 0.062, "churn_add": 2.5},
    (160, 1000, 1.0): {"displaced": 0.0, "churn_add": 0.99},
    (160, 1000, 0.25): {"displaced": 0.0001, "churn_add": 0.99},
    (160, 1000, 0.10): {"displaced": 0.006, "churn_add": 1.17,
                        "churn_remove": 1.15},
    (160, 1000, 0.05): {"displaced": 0.019, "churn_add": 1.43,
                        "churn_remove": 1.40},
    (160, 1000, 0.01): {"displaced": 0.040, "churn_add": 1.9,
                        "churn_remove": 2.0},
    (1, 1000, 0.25): {"displaced": 0.35, "churn_add": 6.5,
                      "churn_remove": 7.0},
    (1, 1000, 1.0): {"displaced": 0.16, "churn_add": 1.4,
                     "churn_remove": 1.6},
    (16, 1000, 0.25): {"displaced": 0.025, "churn_add": 1.4,
                       "churn_remove": 1.4},
    (16, 1000, 0.05): {"displaced": 0.097, "churn_add": 2.4,
                       "churn_remove": 2.5},
}
# Model B: V -> {metric: value}.
PUB_SPREAD_NODES = 8
PUB_SPREAD = {
    1: {"rel_spread": 1.0370, "max_mean": 3.349},
    10: {"rel_spread": 0.3309},
    100: {"rel_spread": 0.0959, "max_mean": 1.141},
}

GRID_FIELDS = {"nodes": int, "keys_per_node": int, "tokens": int,
               "eps": str, "seeds": int, "rule": str, "displaced": float,
               "churn_add": float, "churn_remove": float}
SPREAD_FIELDS = {"nodes": int, "tokens": int, "seeds": int,
                 "max_mean": float, "rel_spread": float}
GRID_METRICS = [
    ("displaced", "displaced: keys off their ring owner (%)"),
    ("churn_add", "churn on add: moved / (K/(N+1))"),
    ("churn_remove", "churn on remove: moved / (K/N)"),
]
# Colour-blind-safe colours (Okabe and Ito) for up to six token counts.
COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
           "#56B4E9"]
RULE_STYLE = {"replace": ("-", "o"), "rebalance": ("--", "^")}
PUB_STYLE = dict(marker="D", markersize=11, markerfacecolor="none",
                 markeredgewidth=2.2, linestyle="none")


class BadInput(Exception):
    """Input that cannot be plotted; the message says where and why."""


def read_rows(paths, fields):
    """Rows of every JSON array in PATHS ("-": stdin), checked for FIELDS."""
    rows = []
    for path in paths:
        name = "<stdin>" if path == "-" else path
        try:
            if path == "-":
                text = sys.stdin.read()
            else:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise BadInput("%s: cannot read: %s" % (name, e))
        arrays = decode_arrays(text, name)
        for a, array in enumerate(arrays):
            for i, row in enumerate(array):
                where = "%s: array %d, row %d" % (name, a + 1, i + 1)
                rows.append(check_row(row, fields, where))
    if not rows:
        raise BadInput("no rows in the input")
    return rows


def decode_arrays(text, name):
    """The JSON arrays, one after another, that make up TEXT."""
    dec = json.JSONDecoder()
    arrays = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            break
        try:
            value, pos = dec.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise BadInput("%s: not JSON: %s" % (name, e))
        if not isinstance(value, list):
            raise BadInput("%s: expected a JSON array of rows (brim-sim "
                           "--format json), got %s" %
                           (name, type(value).__name__))
        arrays.append(value)
    if not arrays:
        raise BadInput("%s: empty input" % name)
    return arrays


def check_row(row, fields, where):
    """ROW, if it is an object with every field of FIELDS of its type."""
    if not isinstance(row, dict):
        raise BadInput("%s: expected an object, got %s" %
                       (where, type(row).__name__))
    for key, kind in fields.items():
        if key not in row:
            raise BadInput("%s: no field \"%s\" (is this the output of "
                           "the right brim-sim command?)" % (where, key))
        v = row[key]
        if kind is float:
            ok = (isinstance(v, (int, float)) and not isinstance(v, bool)
                  and math.isfinite(v) and v >= 0)
        elif kind is int:
            ok = isinstance(v, int) and not isinstance(v, bool) and v > 0
        else:
            ok = isinstance(v, str)
        if not ok:
            raise BadInput("%s: field \"%s\" is %s, expected a %s" %
                           (where, key, json.dumps(v),
                            {float: "number >= 0", int: "positive integer",
                             str: "string"}[kind]))
    return row


def index_rows(rows, key_fn, what):
    """ROWS by KEY_FN(row); a key seen twice is an error."""
    out = {}
    for r in rows:
        k = key_fn(r)
        if k in out:
            raise BadInput("two rows for %s %r" % (what, k))
        out[k] = r
    return out


def pick_nodes(rows, want):
    """The rows at node count WANT, or at the input's only node count."""
    counts = sorted({r["nodes"] for r in rows})
    if want is None:
        if len(counts) > 1:
            raise BadInput("the input holds node counts %s: pick one with "
                           "--nodes" % ", ".join(map(str, counts)))
        want = counts[0]
    kept = [r for r in rows if r["nodes"] == want]
    if not kept:
        raise BadInput("no rows with nodes = %d (the input has %s)" %
                       (want, ", ".join(map(str, counts))))
    return want, kept


def plot_grid(args, plt):
    from matplotlib.lines import Line2D
    from matplotlib.ticker import LogLocator

    nodes, rows = pick_nodes(read_rows(args.json, GRID_FIELDS), args.nodes)
    for r in rows:
        if r["rule"] not in RULE_STYLE:
            raise BadInput("unknown rule \"%s\"" % r["rule"])
        if r["eps"] != "none":
            try:
                r["eps_value"] = float(r["eps"])
            except ValueError:
                raise BadInput("bad eps \"%s\"" % r["eps"])
    rows = [r for r in rows if r["eps"] != "none"]
    if not rows:
        raise BadInput("every row has eps \"none\": nothing to draw")
    cells = index_rows(rows, lambda r: (r["keys_per_node"], r["tokens"],
                                        r["rule"], r["eps_value"]),
                       "(keys per node, tokens, rule, eps)")
    kpns = sorted({k[0] for k in cells})
    tokens = sorted({k[1] for k in cells})
    rules = [r for r in RULE_STYLE if any(k[2] == r for k in cells)]
    seeds = sorted({r["seeds"] for r in rows})
    colour = {p: COLOURS[i % len(COLOURS)] for i, p in enumerate(tokens)}

    fig, axes = plt.subplots(len(kpns), 3, squeeze=False,
                             figsize=(16, 4.2 * len(kpns) + 1.6))
    for row_axes, kpn in zip(axes, kpns):
        for ax, (metric, label) in zip(row_axes, GRID_METRICS):
            scale = 100.0 if metric == "displaced" else 1.0
            for p in tokens:
                for rule in rules:
                    if metric == "displaced" and rule != "replace":
                        continue        # displaced is the N-node placement
                    pts = sorted((k[3], c[metric] * scale)
                                 for k, c in cells.items()
                                 if k[:3] == (kpn, p, rule) and c[metric] > 0)
                    if pts:
                        ls, mk = RULE_STYLE[rule]
                        ax.plot(*zip(*pts), linestyle=ls, marker=mk,
                                markersize=5, color=colour[p], linewidth=1.6)
                pub = sorted((k[2], v[metric] * scale)
                             for k, v in PUB_GRID.items()
                             if k[:2] == (p, kpn) and v.get(metric, 0) > 0)
                if pub and nodes == PUB_NODES:
                    ax.plot(*zip(*pub), color=colour[p], **PUB_STYLE)
            if metric != "displaced":
                ax.axhline(1.0, color="0.5", linewidth=0.8, linestyle=":")
            ax.set_xscale("log")
            ax.set_yscale("log")
            eps_ticks = sorted({k[3] for k in cells})
            ax.set_xticks(eps_ticks)
            ax.set_xticklabels(["%g" % e for e in eps_ticks])
            ax.minorticks_off()
            # Churn spans 1 to 30: ticks at 1, 2, 5, ...; displaced spans
            # five decades: one tick a decade.
            ax.yaxis.set_major_locator(LogLocator(
                subs=(1,) if metric == "displaced" else (1, 2, 5)))
            ax.yaxis.set_major_formatter(
                plt.FuncFormatter(lambda y, _: "%g" % y))
            ax.set_xlabel("eps (cap = ceil((1+eps) K/N))")
            ax.set_ylabel(label)
            ax.set_title("%s, %d keys per node" % (metric, kpn))
            ax.grid(True, which="major", alpha=0.3)

    handles = [Line2D([], [], color=colour[p], linewidth=3,
                      label="P = %d token%s per node" %
                      (p, "" if p == 1 else "s")) for p in tokens]
    names = {"replace": "brim-sim, replace rule (the published model)",
             "rebalance": "brim-sim, rebalance rule (the live cluster)"}
    for rule in rules:
        ls, mk = RULE_STYLE[rule]
        handles.append(Line2D([], [], color="k", linestyle=ls, marker=mk,
                              label=names[rule]))
    if nodes == PUB_NODES:
        handles.append(Line2D([], [], color="k", label="published "
                              "(seed-figures.md, 6 seeds)", **PUB_STYLE))
    handles.append(Line2D([], [], color="0.5", linestyle=":",
                          label="churn 1: only the node's fair share moves"))
    fig.legend(handles=handles, loc="lower center", ncol=4, frameon=False,
               fontsize=10)
    fig.suptitle("Model A: what the cap costs. N = %d nodes, brim-sim means "
                 "over %s seeds (displaced: the N-node placement, the same "
                 "under both rules; 0 is not drawn)"
                 % (nodes, "/".join(map(str, seeds))), fontsize=13)
    fig.tight_layout(rect=(0, 0.07, 1, 0.97))
    fig.savefig(args.out, dpi=100)


def expected_max_mean(n, v):
    """E[max share] / mean share for N nodes of V tokens: the shares are
    Dirichlet(V, ..., V), i.e. G_i / sum G with G_i ~ Gamma(V) independent
    of the sum, so this is E[max of N Gamma(V)] / V, integrated as
    the integral of 1 - F(x)^N over x >= 0 (trapezoids)."""
    import numpy as np

    hi = v + 15.0 * math.sqrt(v) + 30.0
    x = np.linspace(hi / 4000, hi, 4000)
    k = np.arange(v)
    log_fact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, v)))))
    # Survival of Gamma(V): e^-x * sum over k < V of x^k / k!.
    surv = np.exp(np.outer(k, np.log(x)) - log_fact[:, None] - x).sum(axis=0)
    y = 1.0 - (1.0 - np.minimum(surv, 1.0)) ** n
    area = ((y[1:] + y[:-1]) * np.diff(x)).sum() / 2.0
    area += x[0] * (1.0 + y[0]) / 2.0               # [0, x0]: y(0) = 1
    return area / v


def plot_spread(args, plt):
    import numpy as np

    nodes, rows = pick_nodes(read_rows(args.json, SPREAD_FIELDS), None)
    index_rows(rows, lambda r: (r["seeds"], r["tokens"]), "(seeds, V)")
    seeds = sorted({r["seeds"] for r in rows}, reverse=True)
    vmax = max(r["tokens"] for r in rows)
    vs = np.unique(np.round(np.logspace(0, math.log10(max(vmax, 2)), 40)))
    vs = [int(v) for v in vs]

    fig, (ax_max, ax_rel) = plt.subplots(1, 2, figsize=(14, 6))
    ax_max.plot(vs, [expected_max_mean(nodes, v) for v in vs], color="0.3",
                linewidth=1.5, label="theory: E[max of %d Gamma(V)] / V "
                "(H_%d at V = 1)" % (nodes, nodes))
    ax_rel.plot(vs, [1 / math.sqrt(v) for v in vs], color="0.5",
                linestyle="--", linewidth=1.5,
                label="1/sqrt(V), the published rate")
    ax_rel.plot(vs, [math.sqrt((nodes - 1) / (nodes * v + 1)) for v in vs],
                color="0.3", linewidth=1.5,
                label="sqrt(%d/(%dV+1)), RMS of Beta(V, %dV)" %
                (nodes - 1, nodes, nodes - 1))
    for i, s in enumerate(seeds):
        pts = sorted((r["tokens"], r["max_mean"], r["rel_spread"])
                     for r in rows if r["seeds"] == s)
        v, mm, rel = zip(*pts)
        style = dict(color=COLOURS[i % len(COLOURS)], marker="o",
                     markersize=7, linestyle="none",
                     label="brim-sim, mean over seeds 1..%d" % s)
        if i > 0:               # fewer seeds: hollow
            style["markerfacecolor"] = "none"
            style["markeredgewidth"] = 1.8
        ax_max.plot(v, mm, **style)
        ax_rel.plot(v, rel, **style)
    if nodes == PUB_SPREAD_NODES:
        for ax, metric in ((ax_max, "max_mean"), (ax_rel, "rel_spread")):
            pub = sorted((v, m[metric]) for v, m in PUB_SPREAD.items()
                         if metric in m)
            ax.plot(*zip(*pub), color="k", label="published "
                    "(seed-figures.md, 8 seeds)", **PUB_STYLE)
    for ax in (ax_max, ax_rel):
        ax.set_xscale("log")
        ax.set_xlabel("V, tokens per node")
        ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda x, _: "%g" % x))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=10)
    ax_rel.set_yscale("log")
    ax_rel.yaxis.set_major_formatter(plt.FuncFormatter(lambda y, _: "%g" % y))
    ax_max.set_ylabel("max/mean: largest share / mean share")
    ax_rel.set_ylabel("relative spread: RMS deviation of shares / mean")
    ax_max.set_title("largest node's share over the mean")
    ax_rel.set_title("relative spread of the shares")
    fig.suptitle("Model B: how evenly %d nodes of V random tokens share "
                 "the ring" % nodes, fontsize=13)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(args.out, dpi=100)


def main(argv):
    ap = argparse.ArgumentParser(
        prog="sim_plots.py", description=__doc__.split("\n")[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("figure", choices=("grid", "spread"),
                    help="which brim-sim command's JSON is read")
    ap.add_argument("json", nargs="*", default=["-"],
                    help="brim-sim JSON files; none or - is stdin")
    ap.add_argument("-o", "--out", required=True, help="PNG file to write")
    ap.add_argument("--nodes", type=int, help="grid: the node count drawn")
    args = ap.parse_intermixed_args(argv)
    if not args.json:
        args.json = ["-"]
    try:
        import matplotlib
    except ImportError:
        print("sim_plots.py: matplotlib is missing for %s (Debian: "
              "apt-get install python3-matplotlib)" % sys.executable,
              file=sys.stderr)
        return 1
    matplotlib.use("Agg")       # files only, no display
    import matplotlib.pyplot as plt
    try:
        (plot_grid if args.figure == "grid" else plot_spread)(args, plt)
    except BadInput as e:
        print("sim_plots.py %s: %s" % (args.figure, e), file=sys.stderr)
        return 1
    except OSError as e:
        print("sim_plots.py %s: cannot write %s: %s" %
              (args.figure, args.out, e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
