#!/usr/bin/env python3
"""tests/lint/design_graph_selftest.py - design_graph.py fails on a graph
block that lacks an edge of the code, and on one that has an edge the code
does not, and passes on the right one.

    design_graph_selftest.py DESIGN_GRAPH_PY CALLS_PY
"""
import os
import subprocess
import sys
import tempfile

A_C = "void\nbrim_x_a(void)\n{\n    brim_x_b();\n}\n"
B_C = "void\nbrim_x_b(void)\n{\n}\n"
C_C = "void\nbrim_x_c(void)\n{\n    brim_x_b();\n}\n"


def run(checker, calls, root, doc_text):
    doc = os.path.join(root, "design.md")
    with open(doc, "w") as f:
        f.write(doc_text)
    p = subprocess.run([sys.executable, checker, "--calls", calls, "--root",
                        root, doc], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    return p.returncode, p.stdout


def main():
    checker, calls = sys.argv[1], sys.argv[2]
    root = tempfile.mkdtemp(prefix="design-graph-")
    os.makedirs(os.path.join(root, "x"))
    for name, text in (("a.c", A_C), ("b.c", B_C), ("c.c", C_C)):
        with open(os.path.join(root, "x", name), "w") as f:
            f.write(text)
    cases = [
        ("right", "```graph x\na.c -> b.c\nc.c -> b.c\n```\n", 0, None),
        ("an edge left out", "```graph x\na.c -> b.c\n```\n", 1,
         "c.c -> b.c is in the code"),
        ("an edge made up", "```graph x\na.c -> b.c\nc.c -> b.c\n"
         "b.c -> a.c\n```\n", 1, "b.c -> a.c is in"),
        ("a file left out on purpose", "```graph x -c.c\na.c -> b.c\n```\n",
         0, None),
        ("no block", "no graph here\n", 2, None),
    ]
    failed = 0
    for what, doc, want, text in cases:
        rc, out = run(checker, calls, root, doc)
        ok = rc == want and (text is None or text in out)
        print("%s: %s (exit %d)" % ("ok" if ok else "FAILED", what, rc))
        if not ok:
            print(out)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
