#!/usr/bin/env python3
"""tests/lint/docs_help.py - the --help texts quoted in the docs are the
binaries' own (issue 12: docs/client.md's brimctl block had drifted).

A quoted help text is a fenced block whose info string is `help` and a
command line, in README.md or docs/*.md:

    ```help brimctl --help
    usage: brimctl ...
    ```

The command's first word is a program of BIN (the build's bin/ folder);
the block must be exactly what it prints on stdout, and it must exit 0.

Usage: docs_help.py --bin BIN [ROOT]   (ROOT defaults to the current
                                        directory)
       docs_help.py --bin BIN --selftest
Prints each block that differs with the start of a diff; exit 1 if any
differs (or none is found), 0 otherwise, 2 on a usage error.
"""
import difflib
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

BLOCK = re.compile(r"^```help[ \t]+([^\n]+)\n(.*?)^```[ \t]*$", re.M | re.S)


def blocks(root):
    files = [os.path.join(root, "README.md")] + sorted(
        glob.glob(os.path.join(root, "docs", "*.md")))
    for path in files:
        if not os.path.exists(path):
            continue
        with open(path) as f:
            text = f.read()
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            yield os.path.relpath(path, root), line, m.group(1), m.group(2)


def check(root, bindir):
    n = bad = 0
    for rel, line, cmd, quoted in blocks(root):
        n += 1
        argv = shlex.split(cmd)
        prog = os.path.join(bindir, argv[0])
        r = subprocess.run([prog] + argv[1:], capture_output=True, text=True,
                           timeout=30)
        if r.returncode != 0 or r.stdout != quoted:
            bad += 1
            print("%s:%d: `%s` (exit %d) prints something else:" %
                  (rel, line, cmd, r.returncode))
            diff = list(difflib.unified_diff(
                quoted.splitlines(), r.stdout.splitlines(), "docs", "binary",
                lineterm="", n=1))
            print("\n".join(diff[:30]))
    if n == 0:
        print("docs_help: no ```help block found under %s" % root)
        return 1
    print("docs_help: %d quoted help texts, %d differ" % (n, bad))
    return 1 if bad else 0


def selftest(root, bindir):
    tmp = tempfile.mkdtemp(prefix="brim-docs-help-")
    try:
        os.makedirs(os.path.join(tmp, "docs"))
        for rel, _, _, _ in {b[0]: b for b in blocks(root)}.values():
            shutil.copy(os.path.join(root, rel), os.path.join(tmp, rel))
        ok = check(tmp, bindir) == 0
        path = os.path.join(tmp, next(blocks(tmp))[0])
        with open(path) as f:
            text = f.read()
        m = next(BLOCK.finditer(text))
        with open(path, "w") as f:
            f.write(text[:m.start(2)] + "  a line the binary never printed\n"
                    + text[m.start(2):])
        planted = check(tmp, bindir) == 1
        print("selftest: clean copy %s, planted line %s" %
              ("passes" if ok else "FAILS", "fails" if planted
               else "PASSES (wrong)"))
        return 0 if ok and planted else 1
    finally:
        shutil.rmtree(tmp)


def main(argv):
    args = argv[1:]
    if len(args) < 2 or args[0] != "--bin":
        print(__doc__.strip().splitlines()[-6])
        return 2
    bindir, rest = args[1], args[2:]
    here = os.path.dirname(os.path.abspath(__file__))
    if rest == ["--selftest"]:
        return selftest(os.path.dirname(os.path.dirname(here)), bindir)
    if len(rest) > 1:
        return 2
    return check(rest[0] if rest else ".", bindir)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
