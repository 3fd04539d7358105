#!/usr/bin/env python3
"""tests/lint/format.py - every tracked C source and header is exactly what
clang-format 14 makes of it with the committed .clang-format (STYLE.md
section 3).

The files are `git ls-files '*.c' '*.h'` of ROOT, minus EXCLUDE below.
clang-format 14 is the version .clang-format is written for (Debian 12's
clang-format-14; others lay some constructs out differently): the check
looks for clang-format-14, then a clang-format that says it is version 14,
or takes $BRIM_CLANG_FORMAT.

Prints the files that differ and the start of each one's diff, and how to
fix them. Exit 0: every file is formatted; 1: some differ; 2: no git tree
or no clang-format 14; 77 (CTest's SKIP_RETURN_CODE): only when
BRIM_LINT_FORMAT=off is in the environment, which skips the check.

Usage: format.py [ROOT]   (ROOT defaults to the current directory)
Fix one file: clang-format-14 -i FILE (only in a commit of its own).
"""

import concurrent.futures
import difflib
import fnmatch
import os
import re
import shutil
import subprocess
import sys

SKIP = 77

# Tracked C files the check leaves alone: vendored or generated code, laid
# out by someone else. Patterns for fnmatch, relative to the root. None
# today.
EXCLUDE = []

# How many differing files get a diff excerpt, and how many lines each.
SHOW_FILES = 8
SHOW_LINES = 24


def find_clang_format():
    env = os.environ.get("BRIM_CLANG_FORMAT")
    names = [env] if env else ["clang-format-14", "clang-format"]
    for name in names:
        path = shutil.which(name)
        if path is None:
            continue
        v = subprocess.run([path, "--version"], capture_output=True,
                           text=True)
        m = re.search(r"clang-format version (\d+)\.", v.stdout)
        if m and m.group(1) == "14":
            return path, v.stdout.strip()
        if env:
            return None, "%s is %s, not 14" % (env, v.stdout.strip())
    return None, "no clang-format 14 (install clang-format-14: " \
        "deploy/packages.txt)"


def tracked(root):
    p = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", "*.c",
                        "*.h"], capture_output=True)
    if p.returncode != 0:
        return None
    files = [f.decode() for f in p.stdout.split(b"\0") if f]
    return [f for f in files
            if not any(fnmatch.fnmatch(f, pat) for pat in EXCLUDE)
            and os.path.isfile(os.path.join(root, f))]


def formatted(cf, root, rel):
    """(REL, its text, clang-format's text)."""
    path = os.path.join(root, rel)
    style = "--style=file:" + os.path.join(root, ".clang-format")
    p = subprocess.run([cf, style, path], capture_output=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError("%s failed on %s: %s" % (cf, rel,
                                                    p.stderr.decode()))
    with open(path, "rb") as f:
        return rel, f.read(), p.stdout


def main(argv):
    if os.environ.get("BRIM_LINT_FORMAT") == "off":
        print("format: skipped (BRIM_LINT_FORMAT=off)")
        return SKIP
    root = argv[1] if len(argv) > 1 else "."
    if not os.path.isfile(os.path.join(root, ".clang-format")):
        print("format: %s has no .clang-format" % root, file=sys.stderr)
        return 2
    cf, version = find_clang_format()
    if cf is None:
        print("format: %s" % version, file=sys.stderr)
        return 2
    files = tracked(root)
    if files is None:
        print("format: %s is not a git work tree" % root, file=sys.stderr)
        return 2
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = sorted(pool.map(lambda f: formatted(cf, root, f), files))
    differ = [(rel, have, want) for rel, have, want in results
              if have != want]
    if not differ:
        print("format: %d files checked with %s, all formatted" %
              (len(files), version))
        return 0
    print("format: %d of %d files differ from %s with .clang-format:" %
          (len(differ), len(files), os.path.basename(cf)))
    for rel, _, _ in differ:
        print("  " + rel)
    for rel, have, want in differ[:SHOW_FILES]:
        diff = list(difflib.unified_diff(
            have.decode(errors="replace").splitlines(),
            want.decode(errors="replace").splitlines(),
            "a/" + rel, "b/" + rel, lineterm="", n=1))
        print("\n".join(diff[:SHOW_LINES]))
        if len(diff) > SHOW_LINES:
            print("... (%d more diff lines)" % (len(diff) - SHOW_LINES))
    if len(differ) > SHOW_FILES:
        print("... (and %d more files)" % (len(differ) - SHOW_FILES))
    print("format: fix with `clang-format-14 -i FILE...` in a commit of its "
          "own; BRIM_LINT_FORMAT=off skips this check")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
