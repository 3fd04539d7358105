#!/usr/bin/env python3
"""tests/lint/calls.py - the file-level call graph of one folder, and no
cycle in it.

For the .c files directly in FOLDER (server/ means server/*.c, not
server/node/), universal-ctags lists the functions each file defines. Each
file's text, with comments, strings and character constants blanked, is
then scanned for identifiers that name a function with external linkage
defined in another file of the folder: file A "calls" file B when A uses
(calls, or takes the address of) a function defined in B. A function a file
defines itself, static or not, is never counted as a use of another's, and
a name after "." or "->" is a member, not a function. (A struct member
declared with a function's name would still count; brim's prefixed names
make that rare.) A name defined with external linkage in two files is the
main() of two programs built from one folder: no edge.

A cycle (A calls B and B, directly or through other files, calls A) means
the files cannot be read, tested or replaced one at a time: it fails the
check, unless every file of the cycle is in one entry of ALLOW below for
that folder.

Usage:
  calls.py [--root ROOT] [--no-allow] [--allow FOLDER:A.c,B.c...] FOLDER...
      check each FOLDER: exit 1 on a cycle outside ALLOW, 0 otherwise
  calls.py [--root ROOT] --graph FOLDER
      print the graph: one line per edge, "a.c -> b.c (fn1, fn2)", then the
      strongly connected components (the cycles) and an order of the
      files, callers first; exit 0
ROOT defaults to the current directory. Exit 2: usage error, or no ctags.
Needs universal-ctags (deploy/packages.txt).
"""

import argparse
import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys

# Cycles allowed for now: (folder, files, why). A cycle passes when its
# files are all in one entry of its folder; an entry no cycle needs is
# reported so that it can be removed.
ALLOW = []

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def strip_c(text):
    """TEXT with comments, string literals and character constants
    replaced by spaces (newlines kept, so line numbers hold), and #include
    lines blanked."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            j = i
            while j < n and text[j] not in "/\"'":
                j += 1
            if j == i:
                j = i + 1
            out.append(text[i:j])
            i = j
    return re.sub(r"(?m)^[ \t]*#[ \t]*include\b.*$", "", "".join(out))


def ctags_defs(ctags, files):
    """{file: {name: is_static}} of the functions FILES define."""
    cmd = [ctags, "--output-format=json", "--fields=+n",
           "--fields-C=+{properties}", "--kinds-C=f", "--language-force=C",
           "--sort=no", "-o", "-"] + files
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit("calls: %s failed: %s" % (" ".join(cmd[:3]),
                                                   p.stderr.strip()))
    defs = {f: {} for f in files}
    for line in p.stdout.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or tag.get("kind") != "function":
            continue
        static = tag.get("file", False) or "static" in tag.get(
            "properties", "")
        defs[tag["path"]][tag["name"]] = static
    return defs


def graph(ctags, root, folder):
    """(files, edges) of FOLDER: edges[(a, b)] = {fn: first line in a}."""
    paths = sorted(glob.glob(os.path.join(root, folder, "*.c")))
    if not paths:
        raise SystemExit("calls: no .c file in %s" % os.path.join(root,
                                                                  folder))
    defs = ctags_defs(ctags, paths)
    owner, dup = {}, collections.defaultdict(set)
    for path, names in defs.items():
        for name, static in names.items():
            if not static:
                dup[name].add(path)
                owner.setdefault(name, path)
    # A name with external linkage in two files (main() of two programs
    # built from one folder) cannot be linked into one program: it is no
    # edge.
    dup = {n: ps for n, ps in dup.items() if len(ps) > 1}
    for name in dup:
        del owner[name]
    edges = collections.defaultdict(dict)
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = strip_c(f.read())
        mine = defs[path]
        for lineno, line in enumerate(text.split("\n"), 1):
            for m in IDENT.finditer(line):
                name = m.group(0)
                where = owner.get(name)
                if where is None or where == path or name in mine:
                    continue
                before = line[:m.start()].rstrip()
                if before.endswith(".") or before.endswith("->"):
                    continue
                edges[(path, where)].setdefault(name, lineno)
    base = os.path.basename
    files = [base(p) for p in paths]
    graph.dups = {n: sorted(base(p) for p in ps) for n, ps in dup.items()}
    return files, {(base(a), base(b)): fns for (a, b), fns in edges.items()}


def sccs(files, edges):
    """Tarjan's strongly connected components, each a sorted list."""
    succ = collections.defaultdict(list)
    for a, b in sorted(edges):
        succ[a].append(b)
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        # Iterative, so a long chain cannot reach Python's recursion limit.
        work = [(v, iter(succ[v]))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(succ[nxt])))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(sorted(comp))

    for f in files:
        if f not in index:
            visit(f)
    return out


def shortest_cycle(start, members, edges):
    """The shortest cycle from START back to START inside MEMBERS."""
    succ = collections.defaultdict(list)
    for a, b in sorted(edges):
        if a in members and b in members:
            succ[a].append(b)
    prev = {start: None}
    queue = collections.deque([start])
    while queue:
        v = queue.popleft()
        for w in succ[v]:
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return None


def full_cycle(members, edges, budget=200000):
    """A cycle through every file of MEMBERS, if a short search finds one."""
    succ = collections.defaultdict(list)
    for a, b in sorted(edges):
        if a in members and b in members:
            succ[a].append(b)
    start = members[0]
    path, seen, steps = [start], {start}, [0]

    def walk(v):
        steps[0] += 1
        if steps[0] > budget:
            return False
        if len(path) == len(members):
            return start in succ[v]
        for w in succ[v]:
            if w not in seen:
                seen.add(w)
                path.append(w)
                if walk(w):
                    return True
                path.pop()
                seen.discard(w)
        return False

    return path + [start] if walk(start) else None


def cycles_covering(comp, edges):
    """Cycles that together pass through every file of COMP: one through
    all of them when there is one, else shortest cycles until each file is
    on one."""
    whole = full_cycle(comp, edges)
    if whole is not None:
        return [whole]
    out, covered = [], set()
    for f in comp:
        if f not in covered:
            c = shortest_cycle(f, set(comp), edges)
            out.append(c)
            covered.update(c)
    return out


def show_cycle(cycle, edges):
    """"a.c -(fn)-> b.c -(fn)-> a.c", one function (the first used) per
    edge, with the line of A where it is used."""
    parts = [cycle[0]]
    for a, b in zip(cycle, cycle[1:]):
        fns = edges[(a, b)]
        fn = min(fns, key=lambda k: (fns[k], k))
        parts.append("-(%s, %s:%d)-> %s" % (fn, a, fns[fn], b))
    return " ".join(parts)


def allowed(folder, comp, allow):
    for f, files, why in allow:
        if f == folder and set(comp) <= set(files):
            return why
    return None


def print_graph(folder, files, edges):
    print("# call graph of %s/: %d files, %d edges" % (folder, len(files),
                                                      len(edges)))
    for (a, b) in sorted(edges):
        print("%s -> %s (%s)" % (a, b, ", ".join(sorted(edges[(a, b)]))))
    comps = sccs(files, edges)
    cyc = [c for c in comps if len(c) > 1]
    print("# strongly connected components of more than one file: %d" %
          len(cyc))
    for c in cyc:
        print("cycle: %s" % " ".join(c))
        for cy in cycles_covering(c, edges):
            print("  %s" % show_cycle(cy, edges))
    for name, where in sorted(graph.dups.items()):
        print("# not an edge: %s is defined in %s (separate programs)" %
              (name, " and ".join(where)))
    # Tarjan gives the components callees first; reversed, callers first.
    order = [" ".join(c) if len(c) == 1 else "{%s}" % " ".join(c)
             for c in reversed(comps)]
    print("# order, callers first: %s" % ", ".join(order))


def check(folder, files, edges, allow):
    bad = 0
    comps = [c for c in sccs(files, edges) if len(c) > 1]
    for c in comps:
        why = allowed(folder, c, allow)
        tag = "allowed (%s)" % why if why else "FAIL"
        print("%s/: cycle of %d files, %s: %s" % (folder, len(c), tag,
                                                 " ".join(c)))
        for cy in cycles_covering(c, edges):
            print("  %s" % show_cycle(cy, edges))
        if not why:
            bad += 1
            print("  edges inside the cycle:")
            for (a, b) in sorted(edges):
                if a in c and b in c:
                    print("    %s -> %s (%s)" %
                          (a, b, ", ".join(sorted(edges[(a, b)]))))
    for f, members, why in allow:
        if f != folder:
            continue
        if not any(set(c) <= set(members) for c in comps):
            print("%s/: note: ALLOW entry %s (%s) matches no cycle any "
                  "more: remove it from tests/lint/calls.py" %
                  (folder, " ".join(members), why))
    if bad:
        print("%s/: %d cycle(s) between its files; calls.py --graph %s "
              "prints the whole graph" % (folder, bad, folder))
    else:
        print("%s/: %d files, %d edges, no cycle outside the allow list" %
              (folder, len(files), len(edges)))
    return bad


def main(argv):
    ap = argparse.ArgumentParser(
        description="file-level call cycles inside a folder")
    ap.add_argument("--root", default=".")
    ap.add_argument("--graph", action="store_true",
                    help="print the graph of the one FOLDER")
    ap.add_argument("--no-allow", action="store_true",
                    help="ignore the allow list")
    ap.add_argument("--allow", action="append", default=[],
                    metavar="FOLDER:A.c,B.c", help="allow one more cycle")
    ap.add_argument("--ctags", default=os.environ.get("BRIM_CTAGS", "ctags"))
    ap.add_argument("folder", nargs="+")
    a = ap.parse_args(argv[1:])
    ctags = shutil.which(a.ctags)
    if ctags is None:
        print("calls: no %s: install universal-ctags (deploy/packages.txt)"
              % a.ctags, file=sys.stderr)
        return 2
    v = subprocess.run([ctags, "--version"], capture_output=True, text=True)
    if "Universal Ctags" not in v.stdout:
        print("calls: %s is not universal-ctags" % ctags, file=sys.stderr)
        return 2
    allow = [] if a.no_allow else list(ALLOW)
    for spec in a.allow:
        folder, _, files = spec.partition(":")
        allow.append((folder, tuple(files.split(",")), "--allow"))
    if a.graph:
        if len(a.folder) != 1:
            ap.error("--graph takes one FOLDER")
        files, edges = graph(ctags, a.root, a.folder[0].rstrip("/"))
        print_graph(a.folder[0].rstrip("/"), files, edges)
        return 0
    bad = 0
    for folder in a.folder:
        folder = folder.rstrip("/")
        files, edges = graph(ctags, a.root, folder)
        bad += check(folder, files, edges, allow)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
