#!/usr/bin/env python3
"""tests/lint/registration.py - every Check TCase is a CTest test, and every
CTest test of a Check binary is a TCase (STYLE.md section 9).

The sources: tests/unit/test_<module>.c, whose TCase X must be the CTest
test unit.<module>.X running test_<module> with CK_RUN_CASE=X, and
tests/cluster/client_<name>.c (libbrim's Check tests), whose TCase X must
be client.<name>.X running test_client_<name>. A TCase is a
tcase_create("X") call outside comments; tcase_create with anything but
a string literal is an error, since nothing can register it from the
source. Fails on:
  - a TCase written but not registered (it would never run);
  - a registered test whose TCase is not in the source (it fails with "no
    test ran"), or whose source does not exist;
  - a test whose CK_RUN_CASE or binary does not match its name;
  - a name given to two TCases of one source, or a source with none.

The registered tests come from `ctest --show-only=json-v1` in BUILD (or
from a JSON file of that format, for the self-test).

Usage: registration.py --src TESTS_DIR (--build BUILD [--ctest CTEST] |
                                        --json FILE)
Exit 0: they match; 1: they do not; 2: usage error or ctest failed.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys

CALL = re.compile(r"\btcase_create\s*\(")
LITERAL = re.compile(r'\btcase_create\s*\(\s*"([A-Za-z0-9_]+)"\s*\)')


def strip_comments(text):
    """TEXT with /* */ and // comments blanked (newlines kept); string
    literals are kept as they are."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def source_cases(path):
    """([(case, line)], [problems]) of the Check source PATH."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = strip_comments(f.read())
    cases, problems, seen = [], [], {}
    for m in CALL.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        lit = LITERAL.match(text, m.start())
        if lit is None:
            problems.append("%s:%d: tcase_create() without a string literal:"
                            " nothing can register this TCase from the "
                            "source; write tcase_create(\"name\")" %
                            (path, line))
            continue
        name = lit.group(1)
        if name in seen:
            problems.append("%s:%d: TCase \"%s\" already created at line %d"
                            % (path, line, name, seen[name]))
            continue
        seen[name] = line
        cases.append((name, line))
    return cases, problems


def sources(src):
    """{prefix: (path, binary)} of the Check sources under SRC."""
    out = {}
    for path in sorted(glob.glob(os.path.join(src, "unit", "test_*.c"))):
        module = os.path.basename(path)[len("test_"):-2]
        out["unit.%s." % module] = (path, "test_" + module)
    for path in sorted(glob.glob(os.path.join(src, "cluster",
                                              "client_*.c"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            if CALL.search(strip_comments(f.read())) is None:
                continue                # a helper, not a Check source
        name = os.path.basename(path)[len("client_"):-2]
        out["client.%s." % name] = (path, "test_client_" + name)
    return out


def registered(doc):
    """{test name: (binary basename, CK_RUN_CASE or None)}."""
    out = {}
    for t in doc.get("tests", []):
        cmd = t.get("command") or [""]
        run_case = None
        for prop in t.get("properties", []):
            if prop.get("name") != "ENVIRONMENT":
                continue
            for kv in prop.get("value", []):
                if kv.startswith("CK_RUN_CASE="):
                    run_case = kv[len("CK_RUN_CASE="):]
        out[t["name"]] = (os.path.basename(cmd[0]), run_case)
    return out


def check(src, doc):
    problems = []
    srcs = sources(src)
    tests = registered(doc)
    by_binary = {binary: prefix for prefix, (_, binary) in srcs.items()}
    ncases = 0
    for prefix, (path, binary) in srcs.items():
        cases, bad = source_cases(path)
        problems += bad
        if not cases and not bad:
            problems.append("%s: no tcase_create(\"name\"): a Check source "
                            "with no TCase" % path)
        names = {c for c, _ in cases}
        ncases += len(cases)
        for case, line in cases:
            if prefix + case not in tests:
                problems.append("%s:%d: TCase \"%s\" is written but not "
                                "registered: no CTest test %s%s" %
                                (path, line, case, prefix, case))
        for name, (exe, run_case) in sorted(tests.items()):
            if not name.startswith(prefix):
                continue
            case = name[len(prefix):]
            if case not in names:
                problems.append("%s is registered but %s has no TCase \"%s\""
                                % (name, path, case))
            elif run_case != case or exe != binary:
                problems.append("%s runs %s with CK_RUN_CASE=%s, not %s with "
                                "CK_RUN_CASE=%s" % (name, exe, run_case,
                                                    binary, case))
    for name, (exe, run_case) in sorted(tests.items()):
        known = any(name.startswith(p) for p in srcs)
        if known:
            continue
        if name.startswith("unit."):
            module = name.split(".")[1]
            problems.append("%s is registered but there is no "
                            "tests/unit/test_%s.c" % (name, module))
        elif run_case is not None and exe in by_binary:
            problems.append("%s runs %s (CK_RUN_CASE=%s) but is not named "
                            "%s%s" % (name, exe, run_case, by_binary[exe],
                                      run_case))
    return problems, len(srcs), ncases


def main(argv):
    ap = argparse.ArgumentParser(
        description="Check TCases against the CTest registration")
    ap.add_argument("--src", required=True, help="the tests/ directory")
    ap.add_argument("--build", help="a configured build directory")
    ap.add_argument("--ctest", default="ctest")
    ap.add_argument("--json", help="ctest --show-only=json-v1 output")
    a = ap.parse_args(argv[1:])
    if (a.build is None) == (a.json is None):
        ap.error("give one of --build and --json")
    if a.json:
        with open(a.json) as f:
            doc = json.load(f)
    else:
        p = subprocess.run([a.ctest, "--test-dir", a.build,
                            "--show-only=json-v1"], capture_output=True,
                           text=True, timeout=120)
        if p.returncode != 0:
            print("registration: ctest --show-only failed: %s" % p.stderr,
                  file=sys.stderr)
            return 2
        doc = json.loads(p.stdout)
    problems, nsrc, ncases = check(a.src, doc)
    for line in problems:
        print(line)
    if problems:
        print("registration: %d problem(s); the cases are registered from "
              "tcase_create(\"name\") by brim_unit_test and brim_client_test "
              "(reconfigure the build after adding one)" % len(problems))
        return 1
    print("registration: %d Check sources, %d TCases, each one a CTest test"
          % (nsrc, ncases))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
