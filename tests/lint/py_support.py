#!/usr/bin/env python3
"""tests/lint/py_support.py - the Python tests' helpers live once, in
tests/support/, and their op table is the one brim is built with.

1. tests/support/brimtest.py reads the op table, the roles and the statuses
   from proto/ops.h and <brim/status.h>; DUMP (tests/lint/op_table_dump.c,
   linked with proto/ops.c) prints the ones compiled into brim. They must
   be the same, line for line.
2. No Python file under the SCAN directories, outside tests/support/ and
   tests/lint/ (which name these things to look for them), keeps its own
   copy: an opcode or role bound to a number (`JOIN = 32`, `OP_JOIN = 32`,
   `"JOIN": 32`, `dict(JOIN=32)`, `ROLE_NODE = 2`), or libxxhash loaded
   directly with ctypes (brimtest.partition() is the helper).

Usage: py_support.py --dump BIN --support DIR [--scan DIR...]
Exit 0: all is well; 1: a difference or a copy; 2: usage or a tool failed.
"""

import argparse
import difflib
import os
import re
import subprocess
import sys


def copies(path, names):
    """[(line, what)] of the copies of the op table or the hash in PATH."""
    alt = "|".join(sorted(names, key=len, reverse=True))
    bound = re.compile(r"""(?x)
        # JOIN=32, "JOIN": 32, OP_JOIN = 32
        (?:^|[\s,({])["']?(?:(?:BRIM_)?OP_)?(?:%s)["']?\s*[:=]\s*-?\d
      | ^\s*(?:(?:%s)\s*,\s*)+(?:%s)\s*=\s*\(?\s*\d        # HELLO, PING = 1, 2
      | \bROLE_\w+(?:\s*,\s*ROLE_\w+)*\s*=\s*\(?\s*\d      # ROLE_NODE = 2
    """ % (alt, alt, alt))
    hashing = re.compile(r"""CDLL\(\s*["']libxxhash|find_library\(\s*["']"""
                         r"""xxhash|\.XXH3_64bits""")
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            code = line.split("#", 1)[0]
            if bound.search(code):
                out.append((n, "an opcode or role bound to a number: use "
                            "brimtest.OP / brimtest.ROLE"))
            if hashing.search(code):
                out.append((n, "libxxhash loaded here: use "
                            "brimtest.partition() / key_hash()"))
    return out


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True, help="op_table_dump binary")
    ap.add_argument("--support", required=True, help="tests/support")
    ap.add_argument("--scan", action="append", default=[])
    a = ap.parse_args(argv[1:])
    bad = 0

    p = subprocess.run([a.dump], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        print("py_support: %s failed: %s" % (a.dump, p.stderr),
              file=sys.stderr)
        return 2
    built = p.stdout.splitlines()
    sys.path.insert(0, a.support)
    import brimtest
    read = brimtest.table_lines()
    if read != built:
        bad += 1
        print("py_support: tests/support/brimtest.py reads a table from %s "
              "and %s that is not the one compiled into brim "
              "(op_table_dump):" % (brimtest.OPS_H, brimtest.STATUS_H))
        for line in difflib.unified_diff(built, read, "compiled", "brimtest",
                                         lineterm="", n=0):
            print("  " + line)
    names = set(brimtest.OP) | set(brimtest.OP_RESERVED)

    skip = (os.path.realpath(a.support),
            os.path.dirname(os.path.realpath(__file__)))
    nfiles = 0
    for top in a.scan:
        for d, dirs, files in os.walk(top):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            if os.path.realpath(d).startswith(skip):
                continue
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                path = os.path.join(d, f)
                nfiles += 1
                for n, what in copies(path, names):
                    print("%s:%d: %s" % (path, n, what))
                    bad += 1
    if bad:
        print("py_support: %d problem(s)" % bad)
        return 1
    print("py_support: %d table lines as compiled; %d Python files, no copy "
          "of the op table or the partition hash" % (len(read), nfiles))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
