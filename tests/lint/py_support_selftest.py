#!/usr/bin/env python3
"""tests/lint/py_support_selftest.py - proves that py_support.py fails when
the Python tests' op table is not the compiled one, and when a test script
keeps its own copy of the table or of the partition hash: it plants each in
a temporary directory (a header copy that brimtest.py is pointed at with
BRIM_OPS_H or BRIM_STATUS_H, or a script in a scanned tree) and runs the
check.

Usage: py_support_selftest.py PY_SUPPORT DUMP SUPPORT_DIR OPS_H STATUS_H
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

CLEAN = '''import brimtest as bt

JOIN = bt.OP["JOIN"]
ROLE_NODE = bt.ROLE["NODE"]
P = 256                 # "JOIN": 32 in a comment is no copy


def owner(key, seed):
    return bt.partition(key, seed, P)
'''

# (name, script text appended or None, header edit or None, want, text)
# A header edit is (which, pattern, replacement) on a copy of that header.
CASES = [
    ("clean", None, None, "pass", "no copy"),
    ("dict_literal", 'OPS = {"JOIN": 32, "LEAVE": 33}\n', None, "fail",
     "t/cluster/s.py:10: an opcode or role bound to a number"),
    ("dict_call", "OPC = dict(bw.OP, JOIN=32)\n", None, "fail",
     "bound to a number"),
    ("tuple", "HELLO, PING, STATS = 1, 2, 3\n", None, "fail",
     "bound to a number"),
    ("constant", "MAP_FETCH = 39\n", None, "fail", "bound to a number"),
    ("prefixed_constant", "OP_MAP_FETCH = 39\n", None, "fail",
     "bound to a number"),
    ("role", "ROLE_NODE, ROLE_COORD = 2, 3\n", None, "fail",
     "bound to a number"),
    ("own_xxhash", 'import ctypes\n_xx = ctypes.CDLL("libxxhash.so.0")\n',
     None, "fail", "libxxhash loaded here"),
    ("own_xxh3_call", "h = lib.XXH3_64bits_withSeed(k, len(k), s)\n", None,
     "fail", "libxxhash loaded here"),
    ("ops_h_code_changed", None,
     ("ops", r"XX\(JOIN, 32,", "XX(JOIN, 31,"), "fail",
     "+op 31 JOIN"),
    ("ops_h_row_dropped", None,
     ("ops", r"    XX\(PING, 2, [^\n]*\n", ""), "fail", "-op 2 PING"),
    ("ops_h_flag_changed", None,
     ("ops", r"#define BRIM_OPF_ADMIN +0x10u", "#define BRIM_OPF_ADMIN "
      "0x40u"), "fail", "not the one compiled into brim"),
    ("status_h_value_changed", None,
     ("status", r"XX\(MOVED, 5,", "XX(MOVED, 50,"), "fail",
     "+status 50 MOVED"),
]


def main(argv):
    if len(argv) != 6:
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        return 2
    lint, dump, support, ops_h, status_h = map(os.path.abspath, argv[1:])
    wrong = 0
    with tempfile.TemporaryDirectory(prefix="brim-pysupport.") as tmp:
        for name, text, edit, want, expect in CASES:
            tree = os.path.join(tmp, "t")
            shutil.rmtree(tree, ignore_errors=True)
            os.makedirs(os.path.join(tree, "cluster"))
            with open(os.path.join(tree, "cluster", "s.py"), "w") as f:
                f.write(CLEAN + (text or ""))
            env = dict(os.environ)
            env.pop("BRIM_OPS_H", None)
            env.pop("BRIM_STATUS_H", None)
            if edit is not None:
                which, pat, rep = edit
                src = ops_h if which == "ops" else status_h
                with open(src) as f:
                    body = f.read()
                new, n = re.subn(pat, rep, body, count=1)
                if n != 1:
                    print("selftest %s: the header has no %r any more: "
                          "update the self-test" % (name, pat))
                    wrong += 1
                    continue
                copy = os.path.join(tmp, os.path.basename(src))
                with open(copy, "w") as f:
                    f.write(new)
                env["BRIM_OPS_H" if which == "ops" else "BRIM_STATUS_H"] = copy
            p = subprocess.run([sys.executable, lint, "--dump", dump,
                                "--support", support, "--scan", tree],
                               capture_output=True, text=True, timeout=60,
                               env=env, cwd=tmp)
            got = {0: "pass", 1: "fail"}.get(p.returncode, "error")
            out = p.stdout + p.stderr
            if got != want or expect not in out:
                print("selftest %s: py_support.py says %s, want %s with %r:"
                      "\n%s" % (name, got, want, expect, out))
                wrong += 1
    if wrong:
        print("py_support selftest: %d case(s) wrong" % wrong)
        return 1
    print("py_support selftest: %d planted copies and header changes as "
          "expected" % len(CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
