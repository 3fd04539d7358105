#!/usr/bin/env python3
"""tests/lint/format_selftest.py - proves that format.py fails on a tracked
C file that clang-format would change and passes a formatted tree: it makes
a small git repository in a temporary directory with the project's
.clang-format, plants one badly laid out file at a time and runs the check.

Usage: format_selftest.py PATH/TO/format.py PATH/TO/.clang-format
"""

import os
import shutil
import subprocess
import sys
import tempfile

# Laid out as .clang-format wants (STYLE.md section 3).
GOOD_C = """/* good.c - formatted. */
#include "good.h"

static int
good_twice(int x)
{
    if (x == 0) {
        return 0;
    }
    return 2 * x;
}
"""
GOOD_H = """#ifndef GOOD_H
#define GOOD_H

int good_once(int x);

#endif /* GOOD_H */
"""

# (name, file, text, want, track): write TEXT to FILE (git add it when
# TRACK), then run the check on the repository.
CASES = [
    ("brace_on_same_line", "bad.c",
     "int\nbad(void) {\n    return 0;\n}\n", "fail", True),
    ("return_type_on_name_line", "src/bad.c",
     "int bad(void)\n{\n    return 0;\n}\n", "fail", True),
    ("tab_indent", "bad.c", "int\nbad(void)\n{\n\treturn 0;\n}\n", "fail",
     True),
    ("past_80_columns", "bad.h",
     "int bad_function_with_a_long_name(int first_argument, int "
     "second_argument, int third);\n", "fail", True),
    ("untracked_is_ignored", "scratch.c", "int bad(void) { return 0; }\n",
     "pass", False),
    ("formatted_new_file", "more.c",
     "static int\nmore(void)\n{\n    return 1;\n}\n", "pass", True),
]


def git(repo, *args):
    subprocess.run(["git", "-C", repo] + list(args), check=True,
                   capture_output=True)


def make_repo(repo, clang_format):
    shutil.rmtree(repo, ignore_errors=True)
    os.makedirs(repo)
    shutil.copy(clang_format, os.path.join(repo, ".clang-format"))
    for name, text in (("good.c", GOOD_C), ("good.h", GOOD_H)):
        with open(os.path.join(repo, name), "w") as f:
            f.write(text)
    git(repo, "init", "-q")
    git(repo, "add", ".")


def run(lint, repo, env=None):
    e = dict(os.environ)
    e.pop("BRIM_LINT_FORMAT", None)
    e.update(env or {})
    p = subprocess.run([sys.executable, lint, repo], capture_output=True,
                       text=True, timeout=120, env=e)
    return p.returncode, p.stdout + p.stderr


def main(argv):
    if len(argv) != 3:
        print("usage: format_selftest.py PATH/TO/format.py "
              "PATH/TO/.clang-format", file=sys.stderr)
        return 2
    lint, clang_format = argv[1], argv[2]
    wrong = 0
    with tempfile.TemporaryDirectory(prefix="brim-format.") as tmp:
        repo = os.path.join(tmp, "r")
        make_repo(repo, clang_format)
        rc, out = run(lint, repo)
        if rc != 0:
            print("selftest: the formatted tree does not pass (exit %d):\n%s"
                  % (rc, out))
            wrong += 1
        for name, rel, text, want, track in CASES:
            make_repo(repo, clang_format)
            path = os.path.join(repo, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
            if track:
                git(repo, "add", rel)
            rc, out = run(lint, repo)
            got = {0: "pass", 1: "fail"}.get(rc, "error %d" % rc)
            if got != want or (want == "fail" and
                               ("  " + rel not in out or "@@" not in out)):
                print("selftest %s: format.py says %s, want %s (the file "
                      "named, a diff shown):\n%s" % (name, got, want, out))
                wrong += 1
        # BRIM_LINT_FORMAT=off skips with 77, even on a bad tree.
        make_repo(repo, clang_format)
        with open(os.path.join(repo, "bad.c"), "w") as f:
            f.write("int bad(void) { return 0; }\n")
        git(repo, "add", "bad.c")
        rc, out = run(lint, repo, {"BRIM_LINT_FORMAT": "off"})
        if rc != 77 or "skipped" not in out:
            print("selftest skip: BRIM_LINT_FORMAT=off gives exit %d:\n%s" %
                  (rc, out))
            wrong += 1
        rc, out = run(lint, repo, {"BRIM_LINT_FORMAT": "on"})
        if rc != 1:
            print("selftest: BRIM_LINT_FORMAT=on must not skip (exit %d)" %
                  rc)
            wrong += 1
        # A clang-format that is not version 14 is an error, not a pass.
        rc, out = run(lint, repo, {"BRIM_CLANG_FORMAT": "true"})
        if rc != 2:
            print("selftest: a clang-format that is not 14 gives exit %d:\n%s"
                  % (rc, out))
            wrong += 1
    if wrong:
        print("format selftest: %d case(s) wrong" % wrong)
        return 1
    print("format selftest: %d planted files, the skip and the version "
          "check as expected" % len(CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
