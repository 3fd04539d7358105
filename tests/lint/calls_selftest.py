#!/usr/bin/env python3
"""tests/lint/calls_selftest.py - proves that calls.py finds a call cycle
between the files of a folder, and only a real one: it writes a small
folder in a temporary directory, plants one change at a time and runs the
check on it.

Usage: calls_selftest.py PATH/TO/calls.py
"""

import os
import shutil
import subprocess
import sys
import tempfile

# An acyclic folder: a.c -> b.c, and c.c names a_one only in a comment and
# in a string.
CLEAN = {
    "a.c": """#include "f/b.h"
int
a_one(void)
{
    return b_two() + 1;
}
""",
    "b.c": """static int
helper(void)
{
    return 2;
}

int
b_two(void)
{
    return helper();
}
""",
    "c.c": """/* c_three() does not call a_one(): */
static const char *msg = "a_one( is only text";
int
c_three(void)
{
    return msg[0] == 'a' ? 3 : '"';
}
""",
}

B_CALLS_C = ("b.c", """
int
b_more(void)
{
    return c_three();
}
""")

# (name, want, plants, args, expected text): each plant is (file, text to
# append); ARGS go to calls.py after the folder.
CASES = [
    ("clean", "pass", [], [], "no cycle"),
    ("three_file_cycle", "fail",
     [B_CALLS_C, ("c.c", "int\nc_back(void)\n{\n    return a_one();\n}\n")],
     [], "cycle of 3 files, FAIL: a.c b.c c.c"),
    ("cycle_names_each_edge", "fail",
     [B_CALLS_C, ("c.c", "int\nc_back(void)\n{\n    return a_one();\n}\n")],
     [], "a.c -(b_two, a.c:5)-> b.c -(c_three, b.c:"),
    ("two_file_cycle", "fail",
     [("b.c", "int\nb_back(void)\n{\n    return a_one();\n}\n")], [],
     "cycle of 2 files, FAIL: a.c b.c"),
    ("address_taken_counts", "fail",
     [B_CALLS_C, ("c.c", "int (*cb)(void) = a_one;\n")], [],
     "cycle of 3 files, FAIL"),
    ("own_static_shadows", "pass",
     [B_CALLS_C, ("c.c", "static int\na_one(void)\n{\n    return 0;\n}\n"
                  "int\nc_use(void)\n{\n    return a_one();\n}\n")],
     [], "no cycle"),
    ("member_is_not_a_call", "pass",
     [B_CALLS_C, ("c.c", "struct s;\nint\nc_m(struct s *p, "
                  "struct s v)\n{\n    return p->a_one + v.a_one + p -> "
                  "a_one;\n}\n")],
     [], "no cycle"),
    ("comment_and_string_ignored", "pass",
     [B_CALLS_C, ("c.c", "// a_one();\n/* a_one();\n * b_two() */\n"
                  "static const char *t = \"x\\\" a_one()\";\n")],
     [], "no cycle"),
    ("main_of_two_programs", "pass",
     [("a.c", "int\nmain(void)\n{\n    return 0;\n}\n"),
      ("b.c", "int\nmain(void)\n{\n    return 1;\n}\n"
              "int\nb_main_user(void)\n{\n    return main();\n}\n")],
     [], "no cycle"),
    ("allow_list_covers", "pass",
     [B_CALLS_C, ("c.c", "int\nc_back(void)\n{\n    return a_one();\n}\n")],
     ["--allow", "f:a.c,b.c,c.c"], "allowed (--allow)"),
    ("allow_list_too_small", "fail",
     [B_CALLS_C, ("c.c", "int\nc_back(void)\n{\n    return a_one();\n}\n")],
     ["--allow", "f:a.c,b.c"], "cycle of 3 files, FAIL"),
    ("stale_allow_entry_noted", "pass", [], ["--allow", "f:a.c,b.c"],
     "matches no cycle any more"),
]


def build(tree, plants):
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(os.path.join(tree, "f"))
    for name, text in CLEAN.items():
        with open(os.path.join(tree, "f", name), "w") as f:
            f.write(text)
    for name, text in plants:
        with open(os.path.join(tree, "f", name), "a") as f:
            f.write(text)


def run(lint, tree, args):
    p = subprocess.run([sys.executable, lint, "--root", tree, "--no-allow",
                        "f"] + args, capture_output=True, text=True,
                       timeout=60)
    got = {0: "pass", 1: "fail"}.get(p.returncode, "error")
    return got, p.stdout + p.stderr


def main(argv):
    if len(argv) != 2:
        print("usage: calls_selftest.py PATH/TO/calls.py", file=sys.stderr)
        return 2
    lint = argv[1]
    wrong = 0
    with tempfile.TemporaryDirectory(prefix="brim-calls.") as tmp:
        tree = os.path.join(tmp, "t")
        for name, want, plants, args, text in CASES:
            build(tree, plants)
            got, out = run(lint, tree, args)
            if got != want or text not in out:
                print("selftest %s: calls.py says %s, want %s with %r:\n%s"
                      % (name, got, want, text, out))
                wrong += 1
        # --graph prints each edge with its functions, and the cycle.
        build(tree, [B_CALLS_C, ("c.c", "int\nc_back(void)\n{\n    return "
                                "a_one() + b_two();\n}\n")])
        p = subprocess.run([sys.executable, lint, "--root", tree, "--graph",
                            "f"], capture_output=True, text=True, timeout=60)
        for text in ("a.c -> b.c (b_two)", "b.c -> c.c (c_three)",
                     "c.c -> a.c (a_one)", "c.c -> b.c (b_two)",
                     "cycle: a.c b.c c.c"):
            if p.returncode != 0 or text not in p.stdout:
                print("selftest graph: no %r in (exit %d):\n%s" %
                      (text, p.returncode, p.stdout + p.stderr))
                wrong += 1
    if wrong:
        print("calls selftest: %d case(s) wrong" % wrong)
        return 1
    print("calls selftest: %d planted changes and --graph as expected" %
          len(CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
