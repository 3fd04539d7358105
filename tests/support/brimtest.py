"""tests/support/brimtest.py - what brim's Python tests share, kept once.

  - The op table, roles and statuses, read from the C headers themselves
    (proto/ops.h's BRIM_OP_MAP, BRIM_OP_RESERVED_MAP, enum brim_role and
    enum brim_rep_shape; <brim/status.h>'s BRIM_STATUS_MAP) when this module
    is imported, so there is no copy to fall behind. lint.py_support checks
    the result against the table compiled into proto/ops.c.
  - key_hash() and partition(): XXH3-64 with the cluster's seed from the
    system's libxxhash, as common/hash.c computes it (DESIGN.md section 3).
  - The case harness: a Cases registry (@cases), and main(), which gives
    every test script the same command line: `SCRIPT --list` prints the
    case names one a line (tests/CMakeLists.txt's brim_script_tests
    registers one CTest test per name), `SCRIPT [options] CASE` runs one.

Scripts in tests/<dir>/ import it after
    sys.path.insert(0, os.path.join(HERE, "..", "support"))
BRIM_OPS_H and BRIM_STATUS_H in the environment name other headers to read
(the lint's self-test plants a wrong table that way).
"""

import argparse
import collections
import ctypes
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OPS_H = os.environ.get("BRIM_OPS_H") or os.path.join(ROOT, "proto", "ops.h")
STATUS_H = (os.environ.get("BRIM_STATUS_H")
            or os.path.join(ROOT, "include", "brim", "status.h"))

SKIP = 77                               # CTest's SKIP_RETURN_CODE


# ---- the C headers ----

def _uncomment(text):
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def _macro(text, name):
    """The body of #define NAME(...) in TEXT, continuation lines joined."""
    m = re.search(r"^#define[ \t]+%s\([^)]*\)((?:[^\n]*\\\n)*[^\n]*)" % name,
                  text, re.M)
    if m is None:
        raise ValueError("no #define %s in the header" % name)
    return m.group(1).replace("\\\n", " ")


def _enum(text, name):
    """{NAME: value} of enum NAME in TEXT (values counted as C does)."""
    m = re.search(r"enum[ \t]+%s[ \t]*\{(.*?)\}" % name, text, re.S)
    if m is None:
        raise ValueError("no enum %s in the header" % name)
    out, nxt = collections.OrderedDict(), 0
    for item in m.group(1).split(","):
        item = item.strip()
        if not item:
            continue
        key, _, val = item.partition("=")
        nxt = int(val.strip(" ()"), 0) if val else nxt
        out[key.strip()] = nxt
        nxt += 1
    return out


def _int_expr(expr, names):
    """The value of a C constant expression of | and names (flags)."""
    total = 0
    for part in expr.split("|"):
        part = part.strip(" ()")
        if re.fullmatch(r"0[xX][0-9a-fA-F]+[uU]?|\d+[uU]?", part):
            total |= int(part.rstrip("uU"), 0)
        elif part in names:
            total |= names[part]
        else:
            raise ValueError("cannot read %r" % part)
    return total


OpInfo = collections.namedtuple(
    "OpInfo", "name code min_args max_args sig key_arg reply flags")


def read_ops(path=None):
    """(ops, reserved, roles, shapes, flags, code_limit) of proto/ops.h:
    ops {NAME: OpInfo} in table order, reserved {NAME: code}, roles
    {CLIENT: 1, ...}, shapes {EMPTY: 0, ...}, flags {KEY: 0x01, ...}."""
    with open(path or OPS_H) as f:
        text = _uncomment(f.read())
    flags = {}
    for m in re.finditer(r"^#define[ \t]+BRIM_OPF_(\w+)[ \t]+(.+)$", text,
                         re.M):
        flags["BRIM_OPF_" + m.group(1)] = _int_expr(m.group(2), flags)
    shapes = _enum(text, "brim_rep_shape")
    roles = _enum(text, "brim_role")
    row = re.compile(r'XX\(\s*(\w+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,'
                     r'\s*"([^"]*)"\s*,\s*(-?\d+)\s*,\s*(\w+)\s*,\s*([^)]*)\)')
    ops = collections.OrderedDict()
    for m in row.finditer(_macro(text, "BRIM_OP_MAP")):
        name, code, mina, maxa, sig, karg, rep, fl = m.groups()
        ops[name] = OpInfo(name, int(code), int(mina), int(maxa), sig,
                           int(karg), shapes[rep], _int_expr(fl, flags))
    reserved = collections.OrderedDict(
        (m.group(1), int(m.group(2))) for m in re.finditer(
            r"XX\(\s*(\w+)\s*,\s*(\d+)\s*\)",
            _macro(text, "BRIM_OP_RESERVED_MAP")))
    limit = re.search(r"^#define[ \t]+BRIM_OP_CODE_LIMIT[ \t]+(\d+)", text,
                      re.M)
    if not ops or limit is None:
        raise ValueError("%s: no BRIM_OP_MAP rows or no BRIM_OP_CODE_LIMIT"
                         % (path or OPS_H))
    short = {k[len("BRIM_OPF_"):]: v for k, v in flags.items()
             if not k.endswith("_")}
    return (ops, reserved,
            collections.OrderedDict((k[len("BRIM_ROLE_"):], v)
                                    for k, v in roles.items()),
            collections.OrderedDict((k[len("BRIM_REP_"):], v)
                                    for k, v in shapes.items()),
            short, int(limit.group(1)))


def read_statuses(path=None):
    """(statuses {NAME: value} with OK 0 first, wire_max) of
    <brim/status.h>: the positive values of BRIM_STATUS_MAP."""
    with open(path or STATUS_H) as f:
        text = _uncomment(f.read())
    out = collections.OrderedDict([("OK", 0)])
    for m in re.finditer(r'XX\(\s*(\w+)\s*,\s*(\d+)\s*,\s*"',
                         _macro(text, "BRIM_STATUS_MAP")):
        out[m.group(1)] = int(m.group(2))
    wire = re.search(r"^#define[ \t]+BRIM_STATUS_WIRE_MAX[ \t]+(\d+)", text,
                     re.M)
    return out, int(wire.group(1))


OP_INFO, OP_RESERVED, ROLE, REP, OPF, OP_CODE_LIMIT = read_ops()
OP = {name: info.code for name, info in OP_INFO.items()}   # defined ops
OP_NAME = {code: name for name, code in
           list(OP.items()) + list(OP_RESERVED.items())}
_STATUS, WIRE_STATUS_MAX = read_statuses()
ST = {k: v for k, v in _STATUS.items() if v <= WIRE_STATUS_MAX}
ST_LOCAL = {k: v for k, v in _STATUS.items() if v > WIRE_STATUS_MAX}
ST_NAME = {v: k for k, v in ST.items()}


def table_lines():
    """The tables above as text, one item a line, in the format of
    tests/lint/op_table_dump.c (lint.py_support compares the two)."""
    out = []
    for code in range(OP_CODE_LIMIT):
        name = OP_NAME.get(code)
        if name in OP_INFO:
            i = OP_INFO[name]
            out.append("op %d %s %d %d \"%s\" %d %d 0x%02x" % (
                i.code, i.name, i.min_args, i.max_args, i.sig, i.key_arg,
                i.reply, i.flags))
        elif name is not None:
            out.append("reserved %d %s" % (code, name))
    out += ["role %d %s" % (v, k) for k, v in ROLE.items()]
    out += ["status %d %s" % (v, k) for k, v in _STATUS.items()]
    return out


# ---- XXH3 and partitions ----

_xx = None


def key_hash(key, seed):
    """XXH3-64 of KEY (bytes) with SEED, from the system's libxxhash."""
    global _xx
    if _xx is None:
        lib = ctypes.CDLL("libxxhash.so.0")
        lib.XXH3_64bits_withSeed.restype = ctypes.c_uint64
        lib.XXH3_64bits_withSeed.argtypes = (ctypes.c_char_p,
                                             ctypes.c_size_t,
                                             ctypes.c_uint64)
        _xx = lib
    return _xx.XXH3_64bits_withSeed(key, len(key), seed)


def partition(key, seed, partitions):
    """KEY's partition among PARTITIONS (a power of two) under SEED:
    hash & (P - 1), as common/hash.c."""
    return key_hash(key, seed) & (partitions - 1)


# ---- the case harness ----

class Skip(Exception):
    """Raised by a case that cannot run here: main() exits 77 (skipped), or
    1 when the script's REQUIRED_ENV variable is 1 (a skip that must not
    pass unnoticed, as BRIM_MULTIHOST_REQUIRED in CI)."""


class Cases(collections.OrderedDict):
    """A script's cases by name, in definition order. Used as a decorator:
    @cases registers FN under its name ("case_" dropped)."""

    def __call__(self, fn):
        name = fn.__name__
        self[name[len("case_"):] if name.startswith("case_") else name] = fn
        return fn


def skip_or_fail(why, required_env=None):
    """The exit code of a skip: 77, or 1 when REQUIRED_ENV is 1."""
    if required_env and os.environ.get(required_env) == "1":
        print("cannot run here (%s=1: failing): %s" % (required_env, why),
              file=sys.stderr)
        return 1
    print("SKIP: %s (exit %d)" % (why, SKIP), file=sys.stderr)
    return SKIP


def main(cases, options=(), need=(), run=None, before=None, description=None,
         required_env=None, argv=None):
    """The command line of a test script; returns its exit code.

      SCRIPT --list                 the names of CASES, one a line
      SCRIPT [OPTIONS] CASE         run one case
    OPTIONS is a list of (flags, argparse keywords); NEED names the options
    a run cannot do without (--list needs none). RUN(fn, args) calls the
    case (default fn(args)); BEFORE(args), if given, runs first. A case
    passes by returning None or 0 (an int is the exit code) and fails by
    raising; Skip makes it exit 77 (see skip_or_fail)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--list", action="store_true",
                    help="print the case names, one a line, and exit")
    for flags, kw in options:
        if isinstance(flags, str):
            flags = (flags,)
        ap.add_argument(*flags, **kw)
    ap.add_argument("case", nargs="?", help="one of: " + ", ".join(cases))
    a = ap.parse_args(argv)
    if a.list:
        print("\n".join(cases))
        return 0
    if a.case is None or a.case not in cases:
        ap.error("%s: give one case of: %s" % (
            "unknown case %r" % a.case if a.case else "no case",
            ", ".join(cases)))
    missing = ["--" + n.replace("_", "-") for n in need
               if getattr(a, n) is None]
    if missing:
        ap.error("%s needed to run a case" % " and ".join(missing))
    try:
        if before is not None:
            before(a)
        rc = (run or (lambda fn, args: fn(args)))(cases[a.case], a)
    except Skip as e:
        return skip_or_fail(str(e), required_env)
    if rc:
        return rc
    print("PASS %s" % a.case)
    return 0
