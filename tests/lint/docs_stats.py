#!/usr/bin/env python3
"""tests/lint/docs_stats.py - every statistic a daemon reports is explained
in docs/operations.md (issue 12: the page claimed to explain every one and
had drifted).

The names are read from the code that sends them: brim-node's STATS from
server/node/stats.c (emit_u64/emit_f64/emit_str(e, SEC_..., "name", ...)),
the coordinator's CLUSTER_STATS and PLAN from server/coord/cmd.c
(kv_*(&pk, "name", ...)). A name is explained when it stands in backticks
in docs/operations.md, alone or after a section ("`migration.keys_moved`",
"`auth.auth_ok`"), or in a list cell such as "`hits`, `misses`".

Usage: docs_stats.py [ROOT]     (ROOT defaults to the current directory)
       docs_stats.py --selftest (plants an undocumented name: must fail)
Prints each name missing; exit 1 if any, 0 if none, 2 on a usage error.
"""
import os
import re
import shutil
import sys
import tempfile

SOURCES = {
    "server/node/stats.c": re.compile(
        r'\bemit_(?:u64|f64|str)\(\s*e\s*,\s*SEC_[A-Z]+\s*,\s*"([a-z0-9_]+)"'),
    "server/coord/cmd.c": re.compile(
        r'\bkv_[a-z0-9]+\(\s*&?[a-z_]+\s*,\s*"([a-z0-9_]+)"'),
}
DOC = "docs/operations.md"


def names(root):
    out = {}
    for rel, pat in SOURCES.items():
        with open(os.path.join(root, rel)) as f:
            for n in pat.findall(f.read()):
                out.setdefault(n, rel)
    return out


def documented(doc_text):
    found = set()
    for tok in re.findall(r"`([^`\n]+)`", doc_text):
        for part in re.split(r"[\s,/]+", tok):
            part = part.strip()
            if re.fullmatch(r"[a-z0-9_.]+", part):
                found.add(part.rsplit(".", 1)[-1])
                found.add(part)
    return found


def check(root):
    want = names(root)
    if len(want) < 20:
        print("docs_stats: only %d names found in %s: the patterns no "
              "longer match the code" % (len(want), ", ".join(SOURCES)))
        return 1
    with open(os.path.join(root, DOC)) as f:
        have = documented(f.read())
    missing = sorted(n for n in want if n not in have)
    for n in missing:
        print("docs_stats: %s sends `%s`, not explained in %s" %
              (want[n], n, DOC))
    print("docs_stats: %d statistics, %d not explained" %
          (len(want), len(missing)))
    return 1 if missing else 0


def selftest(root):
    tmp = tempfile.mkdtemp(prefix="brim-docs-stats-")
    try:
        for rel in list(SOURCES) + [DOC]:
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)),
                        exist_ok=True)
            shutil.copy(os.path.join(root, rel), os.path.join(tmp, rel))
        ok = check(tmp) == 0
        with open(os.path.join(tmp, "server/node/stats.c"), "a") as f:
            f.write('\nstatic void planted(void) { emit_u64(e, SEC_NODE, '
                    '"planted_undocumented", 0); }\n')
        planted = check(tmp) == 1
        print("selftest: clean tree %s, planted name %s" %
              ("passes" if ok else "FAILS", "fails" if planted
               else "PASSES (wrong)"))
        return 0 if ok and planted else 1
    finally:
        shutil.rmtree(tmp)


def main(argv):
    if len(argv) > 2:
        print(__doc__.strip().splitlines()[-3])
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    if len(argv) == 2 and argv[1] == "--selftest":
        return selftest(os.path.dirname(os.path.dirname(here)))
    return check(argv[1] if len(argv) == 2 else ".")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
