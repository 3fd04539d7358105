#!/usr/bin/env python3
"""tests/lint/design_graph.py - the call graphs docs/design.md draws are
the ones the code has.

    design_graph.py --calls tests/lint/calls.py --root ROOT DOC

DOC's fenced blocks that start "```graph FOLDER [-FILE ...]" list the
folder's file-level call edges, one "a.c -> b.c" a line. Each block must
equal what tests/lint/calls.py --graph FOLDER computes, leaving out the
edges from the FILEs named with "-" (another program's sources). Prints
every edge that is missing from either side; exit 0 when all agree, 1
otherwise, 2 on bad usage (no block at all counts as bad).
"""
import argparse
import re
import subprocess
import sys

EDGE = re.compile(r"^(\S+\.c) -> (\S+\.c)\b")


def doc_blocks(path):
    """[(folder, excluded files, set of edges)] of PATH's graph blocks."""
    out, cur = [], None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if cur is None:
                m = re.match(r"^```graph\s+(\S+)((?:\s+-\S+)*)\s*$", line)
                if m:
                    cur = (m.group(1), {x[1:] for x in m.group(2).split()},
                           set())
                continue
            if line.startswith("```"):
                out.append(cur)
                cur = None
                continue
            m = EDGE.match(line.strip())
            if m:
                cur[2].add((m.group(1), m.group(2)))
            elif line.strip():
                raise SystemExit("%s: not an edge in the graph of %s: %r" %
                                 (path, cur[0], line))
    return out


def code_edges(calls, root, folder, py):
    p = subprocess.run([py, calls, "--root", root, "--graph", folder],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    edges = set()
    for line in p.stdout.splitlines():
        m = EDGE.match(line)
        if m:
            edges.add((m.group(1), m.group(2)))
    return edges


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("doc")
    a = ap.parse_args()
    blocks = doc_blocks(a.doc)
    if not blocks:
        print("%s: no ```graph block" % a.doc)
        return 2
    bad = 0
    for folder, skip, doc in blocks:
        code = {e for e in code_edges(a.calls, a.root, folder,
                                      sys.executable) if e[0] not in skip}
        for e in sorted(code - doc):
            print("%s: %s -> %s is in the code, not in %s" %
                  (folder, e[0], e[1], a.doc))
        for e in sorted(doc - code):
            print("%s: %s -> %s is in %s, not in the code" %
                  (folder, e[0], e[1], a.doc))
        wrong = len(code - doc) + len(doc - code)
        bad += wrong
        print("%s/: %d edges, %s" % (folder, len(doc),
                                     "as the code has them" if not wrong
                                     else "differs"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
