#!/usr/bin/env python3
"""tests/lint/registration_selftest.py - proves that registration.py fails
when the Check sources and the CTest registration disagree: it writes a
small tests/ tree and a `ctest --show-only=json-v1` document in a temporary
directory, plants one disagreement at a time and runs the check.

Usage: registration_selftest.py PATH/TO/registration.py
"""

import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile

SOURCES = {
    "unit/test_foo.c": """Suite *
brim_test_suite(void)
{
    Suite *s = suite_create("foo");
    TCase *tc;

    tc = tcase_create("alpha");
    suite_add_tcase(s, tc);
    add_case(s, tcase_create("beta"),
             foo_beta);
    tc = tcase_create(
        "gamma");
    /* tcase_create("commented_out") is not a case */
    return s;
}
""",
    "cluster/client_bar.c": """    FAULT_CASE(tcase_create("one"), bar_one);
""",
    "cluster/client_node.c": "/* a helper: no TCase */\n",
}


def test(name, exe, case):
    return {"name": name, "command": ["/b/bin/" + exe],
            "properties": [{"name": "ENVIRONMENT",
                            "value": ["CK_RUN_CASE=" + case,
                                      "CK_DEFAULT_TIMEOUT=60"]},
                           {"name": "LABELS", "value": ["unit"]}]}


DOC = {"kind": "ctestInfo", "tests": [
    test("unit.foo.alpha", "test_foo", "alpha"),
    test("unit.foo.beta", "test_foo", "beta"),
    test("unit.foo.gamma", "test_foo", "gamma"),
    test("client.bar.one", "test_client_bar", "one"),
    {"name": "lint.layering", "command": ["/usr/bin/python3", "x.py"],
     "properties": []},
]}


def drop(name):
    def f(doc, src):
        doc["tests"] = [t for t in doc["tests"] if t["name"] != name]
    return f


def add(t):
    def f(doc, src):
        doc["tests"].append(t)
    return f


def append(rel, text):
    def f(doc, src):
        with open(os.path.join(src, rel), "a") as fh:
            fh.write(text)
    return f


# (name, change, want, text the output must hold)
CASES = [
    ("clean", None, "pass", "2 Check sources, 4 TCases"),
    ("written_not_registered", drop("unit.foo.beta"), "fail",
     'TCase "beta" is written but not registered: no CTest test '
     "unit.foo.beta"),
    ("multiline_literal_counts", drop("unit.foo.gamma"), "fail",
     "no CTest test unit.foo.gamma"),
    ("client_case_not_registered", drop("client.bar.one"), "fail",
     "no CTest test client.bar.one"),
    ("registered_not_written", add(test("unit.foo.delta", "test_foo",
                                        "delta")), "fail",
     'unit.foo.delta is registered but ' + "%SRC%/unit/test_foo.c has no "
     'TCase "delta"'),
    ("commented_out_is_no_case", add(test("unit.foo.commented_out",
                                          "test_foo", "commented_out")),
     "fail", 'has no TCase "commented_out"'),
    ("registered_without_source", add(test("unit.gone.x", "test_gone",
                                           "x")), "fail",
     "unit.gone.x is registered but there is no tests/unit/test_gone.c"),
    ("wrong_run_case", add(test("unit.foo.alpha", "test_foo", "beta")),
     "fail", "unit.foo.alpha runs test_foo with CK_RUN_CASE=beta"),
    ("wrong_binary", add(test("unit.foo.beta", "test_bar", "beta")), "fail",
     "unit.foo.beta runs test_bar"),
    ("misnamed_test", add(test("cluster.foo.alpha", "test_foo", "alpha")),
     "fail", "cluster.foo.alpha runs test_foo (CK_RUN_CASE=alpha) but is "
     "not named unit.foo.alpha"),
    ("non_literal_name", append("unit/test_foo.c",
                                "static void\nf(const char *n)\n{\n"
                                "    tcase_create(n);\n}\n"), "fail",
     "tcase_create() without a string literal"),
    ("duplicate_name", append("unit/test_foo.c",
                              '    tc = tcase_create("alpha");\n'), "fail",
     'TCase "alpha" already created'),
    ("source_with_no_case", append("unit/test_empty.c", "/* none */\n"),
     "fail", "test_empty.c: no tcase_create"),
]


def main(argv):
    if len(argv) != 2:
        print("usage: registration_selftest.py PATH/TO/registration.py",
              file=sys.stderr)
        return 2
    lint = argv[1]
    wrong = 0
    with tempfile.TemporaryDirectory(prefix="brim-registration.") as tmp:
        src = os.path.join(tmp, "tests")
        for name, change, want, text in CASES:
            shutil.rmtree(src, ignore_errors=True)
            for rel, body in SOURCES.items():
                os.makedirs(os.path.dirname(os.path.join(src, rel)),
                            exist_ok=True)
                with open(os.path.join(src, rel), "w") as f:
                    f.write(body)
            doc = copy.deepcopy(DOC)
            if change is not None:
                change(doc, src)
            # A duplicate name in the document replaces the first entry, as
            # a second add_test() of one name cannot exist.
            seen = {}
            for t in doc["tests"]:
                seen[t["name"]] = t
            doc["tests"] = list(seen.values())
            jpath = os.path.join(tmp, "ctest.json")
            with open(jpath, "w") as f:
                json.dump(doc, f)
            p = subprocess.run([sys.executable, lint, "--src", src, "--json",
                                jpath], capture_output=True, text=True,
                               timeout=60)
            got = {0: "pass", 1: "fail"}.get(p.returncode, "error")
            out = p.stdout + p.stderr
            if got != want or text.replace("%SRC%", src) not in out:
                print("selftest %s: registration.py says %s, want %s with "
                      "%r:\n%s" % (name, got, want, text, out))
                wrong += 1
    if wrong:
        print("registration selftest: %d case(s) wrong" % wrong)
        return 1
    print("registration selftest: %d planted disagreements as expected" %
          len(CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
