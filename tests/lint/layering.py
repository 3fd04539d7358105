#!/usr/bin/env python3
"""tests/lint/layering.py - the include rules of STYLE.md section 1 and
DESIGN.md section 9, checked on every #include line (quoted or angled) of
the C sources under common/ proto/ server/ client/ sim/.

Between brim's folders (a path that starts with a folder's name):
  common/  common only
  proto/   common + proto
  server/  common + proto + server; never client/ or <brim.h>
  client/  common + proto + client + <brim.h>; never server/
  sim/     common + sim
<brim/status.h> is the one sanctioned upward include (every folder may use
it); <brim.h> and any other <brim/...> header belong to client/. A "../"
path is refused everywhere: includes are relative to the repository root.

System headers: common/, proto/ and sim/ may include only the headers
listed for them below (libc, and the few libraries each one uses), so
sockets, TLS or libuv cannot slip into them; server/ and client/ do I/O
and may include any system header.

Inside client/: a header of one subfolder (client/lib, client/bench,
client/brimctl, ...) is private to it. Another subfolder may include it
only when ALLOW_CLIENT below says so; client/include/ is public.

Usage: layering.py [ROOT]   (ROOT defaults to the current directory)
Prints one line per violation; exits 1 if there is any, 0 otherwise, 2 on
a usage error.
"""

import os
import re
import sys

AREAS = ("common", "proto", "server", "client", "sim")

# Which of brim's folders each folder may include from.
INTERNAL = {
    "common": {"common"},
    "proto": {"common", "proto"},
    "server": {"common", "proto", "server"},
    "client": {"common", "proto", "client", "public"},
    "sim": {"common", "sim"},
}

# ISO C11's headers.
C11 = {
    "assert.h", "complex.h", "ctype.h", "errno.h", "fenv.h", "float.h",
    "inttypes.h", "iso646.h", "limits.h", "locale.h", "math.h", "setjmp.h",
    "signal.h", "stdalign.h", "stdarg.h", "stdatomic.h", "stdbool.h",
    "stddef.h", "stdint.h", "stdio.h", "stdlib.h", "stdnoreturn.h",
    "string.h", "tgmath.h", "threads.h", "time.h", "uchar.h", "wchar.h",
    "wctype.h",
}
# POSIX and glibc headers with no networking and no event loop. Anything
# for sockets, name lookup or readiness (poll, epoll, select) is missing on
# purpose: see NAMED below.
POSIX = {
    "unistd.h", "fcntl.h", "strings.h", "getopt.h", "pthread.h", "sched.h",
    "dirent.h", "libgen.h", "fnmatch.h", "malloc.h", "execinfo.h",
    "endian.h", "byteswap.h", "sys/types.h", "sys/stat.h", "sys/time.h",
    "sys/random.h", "sys/resource.h", "sys/wait.h", "sys/file.h",
    "sys/mman.h", "sys/uio.h",
}
LIBC = C11 | POSIX

# The system headers common/, proto/ and sim/ may include: libc plus the
# libraries each one is built on (DESIGN.md section 9). A pattern ending in
# "/" matches every header below it.
SYSTEM = {
    "common": LIBC | {"xxhash.h"},
    "proto": LIBC | {"xxhash.h", "msgpack.h", "msgpack/", "openssl/"},
    "sim": LIBC | {"jansson.h"},
}

# What a refused system header is, for the message.
NAMED = (
    (re.compile(r"^(sys/socket\.h|sys/un\.h|netinet/|arpa/|netdb\.h|"
                r"net/|ifaddrs\.h)"), "sockets"),
    (re.compile(r"^(poll\.h|sys/epoll\.h|sys/select\.h|sys/eventfd\.h)$"),
     "an event loop"),
    (re.compile(r"^openssl/"), "TLS"),
    (re.compile(r"^uv(\.h$|/)"), "libuv"),
    (re.compile(r"^msgpack(\.h$|/)"), "msgpack"),
    (re.compile(r"^jansson\.h$"), "jansson"),
    (re.compile(r"^xxhash\.h$"), "xxhash"),
)

# Private headers of one client/ subfolder that another may include, and
# why. Everything else under client/<sub>/ is private to <sub>; the public
# headers are client/include/ (<brim.h>, <brim/admin.h>) and the top-level
# include/ (<brim/status.h>).
#   (header or folder/, the subfolders that may include it): why
ALLOW_CLIENT = {
    # The shared client transport (issue 11): libbrim and brim-bench both
    # speak brim's frames through it.
    ("client/net/", ("lib", "bench")): "the shared client transport",
}

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]*)([>"])')


def classify(path):
    """(kind, detail) of an included PATH."""
    parts = path.split("/")
    if ".." in parts:
        return "up", None
    if path == "brim/status.h":
        return "status", None
    if path == "brim.h" or path.startswith("brim/"):
        return "public", None
    if len(parts) > 1 and parts[0] in AREAS + ("tests", "deploy"):
        return "internal", parts[0]
    return "system", path


def system_allowed(area, path):
    if area not in SYSTEM:
        return True
    for pat in SYSTEM[area]:
        if path == pat or (pat.endswith("/") and path.startswith(pat)):
            return True
    return False


def system_why(path):
    for pat, what in NAMED:
        if pat.search(path):
            return what
    return "not in its list of system headers in tests/lint/layering.py"


def client_private(src, path):
    """Why SRC (client/<sub>/...) may not include PATH, or None."""
    s, p = src.split("/"), path.split("/")
    if len(p) < 3 or p[1] == "include":
        return None
    sub = s[1] if len(s) > 2 else ""
    if p[1] == sub:
        return None
    for (hdr, subs), _why in ALLOW_CLIENT.items():
        hit = path == hdr or (hdr.endswith("/") and path.startswith(hdr))
        if hit and sub in subs:
            return None
    return "private to client/%s/" % p[1]


def check_line(area, rel, open_, path, shut):
    """The reason this include breaks a rule, or None."""
    kind, detail = classify(path)
    if kind == "up":
        return 'a ".." path'
    if kind == "status":
        return None
    if kind == "public":
        return None if "public" in INTERNAL[area] else "client/"
    if kind == "internal":
        if detail not in INTERNAL[area]:
            return detail + "/"
        if area == "client" and detail == "client":
            return client_private(rel, path)
        return None
    if not system_allowed(area, path):
        return system_why(path)
    return None


def sources(root):
    for area in AREAS:
        top = os.path.join(root, area)
        for d, dirs, files in os.walk(top):
            dirs.sort()
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    full = os.path.join(d, f)
                    yield area, os.path.relpath(full, root), full


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print(__doc__.split("\n\n")[-2], file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else "."
    if not os.path.isdir(os.path.join(root, "common")):
        print("layering: %s has no common/ directory" % root, file=sys.stderr)
        return 2
    bad = checked = 0
    for area, rel, full in sources(root):
        checked += 1
        with open(full, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if m is None:
                    continue
                open_, path, shut = m.groups()
                why = check_line(area, rel, open_, path, shut)
                if why is not None:
                    print("%s:%d: %s/ must not include %s%s%s (%s)" %
                          (rel, n, area, open_, path, shut, why))
                    bad += 1
    if bad:
        print("layering: %d include(s) break the rules of STYLE.md section 1"
              % bad, file=sys.stderr)
        return 1
    print("layering: %d files checked, no violations" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
