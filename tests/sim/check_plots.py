#!/usr/bin/env python3
"""Check the pictures of docs/simulation.md can be regenerated.

usage: check_plots.py ROOT BRIM_SIM

1. Runs ROOT/deploy/sim-plots.sh --quick --sim BRIM_SIM into a temporary
   directory and checks each PNG it must write: a PNG signature, an IHDR
   of a sane size, an IEND, and a sane file size.
2. Feeds ROOT/sim/plot/sim_plots.py malformed input (bad JSON, the wrong
   shape, the other command's rows, a bad field, nothing at all): each must
   exit 1 with a message saying why, and write no PNG.
3. Checks that every docs/img/*.png docs/simulation.md shows is committed.

The plotting interpreter is $BRIM_PYTHON, else /usr/bin/python3 (where
Debian's python3-matplotlib lives), else this one. Exit 0 when every check
passes, 1 otherwise, 77 (skip) when that interpreter has no matplotlib.
"""

import os
import re
import struct
import subprocess
import sys
import tempfile

PNGS = ["sim-model-a.png", "sim-model-b.png"]
PNG_SIG = b"\x89PNG\r\n\x1a\n"
WIDTH = (800, 4000)             # pixels
HEIGHT = (400, 3000)
BYTES = (20000, 5000000)

# (name, command, stdin, stderr must match)
BAD_INPUTS = [
    ("truncated JSON", "grid", '[{"nodes": 200,', r"<stdin>: not JSON"),
    ("an object, not an array", "spread", '{"nodes": 8}',
     r"expected a JSON array of rows"),
    ("spread rows given to grid", "grid",
     '[{"nodes": 8, "tokens": 1, "seeds": 8, "max_mean": 2.7, '
     '"max_min": 9.0, "rel_spread": 0.9}]',
     r"row 1: no field \"keys_per_node\""),
    ("a number as a string", "spread",
     '[{"nodes": 8, "tokens": 1, "seeds": 8, "max_mean": "2.7", '
     '"rel_spread": 0.9}]', r"field \"max_mean\" is \"2.7\""),
    ("a row that is not an object", "grid", "[[1, 2]]",
     r"row 1: expected an object"),
    ("empty input", "grid", "", r"<stdin>: empty input"),
    ("an empty array", "spread", "[]", r"no rows in the input"),
]


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
        return ok


def plot_python():
    env = os.environ.get("BRIM_PYTHON")
    if env:
        return env
    return "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) \
        else sys.executable


def check_png(path, c):
    name = os.path.basename(path)
    if not c.check(os.path.isfile(path), name + ": not written"):
        return
    with open(path, "rb") as f:
        data = f.read()
    if not c.check(data[:8] == PNG_SIG and data[12:16] == b"IHDR",
                   name + ": no PNG signature and IHDR"):
        return
    width, height = struct.unpack(">II", data[16:24])
    c.check(WIDTH[0] <= width <= WIDTH[1] and
            HEIGHT[0] <= height <= HEIGHT[1],
            "%s: %d x %d pixels, expected %d..%d x %d..%d" %
            ((name, width, height) + WIDTH + HEIGHT))
    c.check(data[-8:-4] == b"IEND", name + ": no IEND chunk at the end")
    c.check(BYTES[0] <= len(data) <= BYTES[1], "%s: %d bytes, expected "
            "%d..%d" % ((name, len(data)) + BYTES))
    print("%s: %d x %d pixels, %d bytes" % (name, width, height, len(data)))


def check_bad_inputs(root, python, tmp, c):
    script = os.path.join(root, "sim", "plot", "sim_plots.py")
    out = os.path.join(tmp, "bad.png")
    for name, figure, text, want in BAD_INPUTS:
        p = subprocess.run([python, script, figure, "--out", out],
                           input=text, capture_output=True, text=True)
        err = p.stderr.strip()
        c.check(p.returncode == 1, "%s: exit %d, expected 1 (stderr: %s)" %
                (name, p.returncode, err))
        c.check(re.search(want, err) is not None,
                "%s: stderr %r does not match %r" % (name, err, want))
        c.check(not os.path.exists(out), name + ": a PNG was written")
        print("refused %s: %s" % (name, err))


def check_docs(root, c):
    with open(os.path.join(root, "docs", "simulation.md"),
              encoding="utf-8") as f:
        shown = re.findall(r"\]\((img/[^)]+\.png)\)", f.read())
    c.check(sorted(set(shown)) == sorted("img/" + p for p in PNGS),
            "docs/simulation.md shows %s, expected %s" % (shown, PNGS))
    for rel in shown:
        c.check(os.path.isfile(os.path.join(root, "docs", rel)),
                "docs/simulation.md shows %s, which is missing" % rel)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    root, sim = argv[1], argv[2]
    python = plot_python()
    probe = subprocess.run([python, "-c", "import matplotlib"],
                           capture_output=True)
    if probe.returncode != 0:
        print("SKIP: %s has no matplotlib; install python3-matplotlib "
              "(deploy/packages.txt lists it)" % python)
        return 77
    c = Checker()
    with tempfile.TemporaryDirectory(prefix="brim-plots.") as tmp:
        env = dict(os.environ, BRIM_PYTHON=python)
        p = subprocess.run(["bash", os.path.join(root, "deploy",
                                                 "sim-plots.sh"),
                            "--quick", "--sim", sim, "--out", tmp], env=env)
        if c.check(p.returncode == 0, "sim-plots.sh --quick exited %d" %
                   p.returncode):
            for png in PNGS:
                check_png(os.path.join(tmp, png), c)
        check_bad_inputs(root, python, tmp, c)
    check_docs(root, c)
    print("plots: %d checks, %d failed" % (c.ran, c.failed))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
