#!/usr/bin/env python3
"""tests/lint/layering_selftest.py - proves that layering.py fails on each
kind of violation and passes a clean tree: it builds small trees in a
temporary directory, plants one include at a time and runs the lint.

Usage: layering_selftest.py PATH/TO/layering.py
"""

import os
import shutil
import subprocess
import sys
import tempfile

# A clean tree: every include a folder may make.
CLEAN = {
    "common/ring.c": ['#include "common/ring.h"', "#include <brim/status.h>",
                      "#include <xxhash.h>", "#include <stdint.h>",
                      "#include <execinfo.h>", "#include <unistd.h>"],
    "proto/wire.c": ['#include "common/defs.h"', '#include "proto/wire.h"',
                     "# include <msgpack.h>", "#include <brim/status.h>",
                     "#include <openssl/hmac.h>", "#include <fcntl.h>"],
    "server/node/store.c": ['#include "common/ring.h"',
                            '#include "proto/wire.h"',
                            '#include "server/conn.h"', "#include <uv.h>",
                            "#include <msgpack.h>",
                            "#include <sys/socket.h>"],
    "client/lib/client.c": ["#include <brim.h>", "#include <brim/status.h>",
                            '#include "client/lib/route.h"',
                            '#include "client/net/conn.h"',
                            '#include "proto/topo.h"', "#include <uv.h>",
                            "#include <netdb.h>"],
    "client/bench/engine.c": ['#include "client/bench/engine.h"',
                              '#include "client/net/conn.h"'],
    "client/brimctl/cmd.c": ['#include "client/brimctl/ctl.h"',
                             "#include <brim.h>", "#include <brim/admin.h>"],
    "client/net/conn.c": ['#include "client/net/conn.h"',
                          '#include "proto/frame.h"'],
    "client/include/brim.h": ["#include <brim/status.h>"],
    "sim/main.c": ['#include "common/placement.h"', '#include "sim/sim.h"',
                   "#include <jansson.h>", "#include <pthread.h>"],
}

# (want, file, line): add LINE to FILE of a clean tree; the lint must say
# WANT.
CASES = [
    ("fail", "common/ring.c", '#include "proto/wire.h"'),
    ("fail", "common/ring.c", '#include "server/conn.h"'),
    ("fail", "common/ring.c", '#include "client/lib/route.h"'),
    ("fail", "common/ring.c", "#include <brim.h>"),
    ("fail", "common/ring.c", '#include "brim.h"'),
    ("fail", "common/ring.c", "#include <uv.h>"),
    ("fail", "common/ring.c", "#include <msgpack.h>"),
    ("fail", "common/ring.c", "#include <msgpack/object.h>"),
    ("fail", "common/ring.c", '#include "sim/sim.h"'),
    ("fail", "common/ring.c", '#include "tests/support/check_main.h"'),
    ("fail", "common/ring.c", '#include "../server/conn.h"'),
    ("fail", "common/ring.c", '  #  include "proto/frame.h"'),
    ("pass", "common/ring.c", '#include "brim/status.h"'),
    # System headers: common/ is libc and xxhash only.
    ("fail", "common/ring.c", "#include <sys/socket.h>"),
    ("fail", "common/ring.c", "#include <netinet/in.h>"),
    ("fail", "common/ring.c", "#include <arpa/inet.h>"),
    ("fail", "common/ring.c", "#include <netdb.h>"),
    ("fail", "common/ring.c", "#include <poll.h>"),
    ("fail", "common/ring.c", "#include <openssl/evp.h>"),
    ("fail", "common/ring.c", "#include <jansson.h>"),
    ("fail", "common/ring.c", "#include <check.h>"),
    ("fail", "common/ring.h", "#include <sys/epoll.h>"),
    ("pass", "common/ring.c", "#include <stdatomic.h>"),
    ("pass", "common/ring.c", "#include <sys/types.h>"),
    # proto/: libc, msgpack, xxhash, OpenSSL; no libuv, no sockets.
    ("fail", "proto/wire.c", '#include "server/conn.h"'),
    ("fail", "proto/wire.c", '#include "client/lib/route.h"'),
    ("fail", "proto/wire.c", "#include <brim.h>"),
    ("fail", "proto/wire.c", "#include <uv.h>"),
    ("fail", "proto/wire.c", "#include <uv/unix.h>"),
    ("fail", "proto/wire.c", "#include <sys/socket.h>"),
    ("fail", "proto/wire.c", "#include <netinet/tcp.h>"),
    ("fail", "proto/wire.c", "#include <netdb.h>"),
    ("pass", "proto/wire.c", "#include <msgpack/object.h>"),
    ("pass", "proto/wire.c", "#include <openssl/rand.h>"),
    # server/ and client/ never include each other.
    ("fail", "server/node/store.c", '#include "client/lib/route.h"'),
    ("fail", "server/node/store.c", '#include "client/net/conn.h"'),
    ("fail", "server/node/store.c", "#include <brim.h>"),
    ("fail", "client/lib/client.c", '#include "server/conn.h"'),
    ("fail", "client/lib/client.c", '#include "server/node/store.h"'),
    # client/: one subfolder's headers are private to it.
    ("fail", "client/lib/client.c", '#include "client/bench/engine.h"'),
    ("fail", "client/lib/client.c", '#include "client/brimctl/ctl.h"'),
    ("fail", "client/bench/engine.c", '#include "client/lib/client_int.h"'),
    ("fail", "client/bench/engine.c", '#include "client/brimctl/ctl.h"'),
    ("fail", "client/brimctl/cmd.c", '#include "client/lib/client_int.h"'),
    ("fail", "client/brimctl/cmd.c", '#include "client/bench/bench.h"'),
    ("fail", "client/brimctl/cmd.c", '#include "client/net/conn.h"'),
    ("fail", "client/brimctl/cmd.c", '#include "client/lib/coordlink.h"'),
    ("fail", "client/bench/engine.c", '#include "client/lib/coordlink.h"'),
    ("fail", "client/net/conn.c", '#include "client/lib/client_int.h"'),
    ("fail", "client/include/brim.h", '#include "client/lib/client_int.h"'),
    ("pass", "client/brimctl/cmd.c", '#include "client/include/brim.h"'),
    ("pass", "client/bench/engine.c", '#include "client/net/sub/x.h"'),
    # sim/: common only.
    ("fail", "sim/main.c", '#include "proto/wire.h"'),
    ("fail", "sim/main.c", '#include "server/node/store.h"'),
    ("fail", "sim/main.c", '#include "client/lib/route.h"'),
    ("fail", "sim/main.c", "#include <uv.h>"),
    ("fail", "sim/main.c", "#include <msgpack.h>"),
    ("fail", "sim/main.c", "#include <brim.h>"),
    ("fail", "sim/main.c", "#include <sys/socket.h>"),
    ("fail", "sim/main.c", "#include <openssl/sha.h>"),
    ("pass", "sim/main.c", "#include <brim/status.h>"),
    ("pass", "sim/main.c", '#include "common/ring.h"'),
    ("fail", "common/ring.h", '#include "proto/wire.h"'),
]


def build(tree):
    shutil.rmtree(tree, ignore_errors=True)
    for rel, lines in CLEAN.items():
        path = os.path.join(tree, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")


def run(lint, tree):
    p = subprocess.run([sys.executable, lint, tree], capture_output=True,
                       text=True, timeout=60)
    return ("pass" if p.returncode == 0 else
            "fail" if p.returncode == 1 else "error"), p.stdout + p.stderr


def main(argv):
    if len(argv) != 2:
        print("usage: layering_selftest.py PATH/TO/layering.py",
              file=sys.stderr)
        return 2
    lint = argv[1]
    wrong = 0
    with tempfile.TemporaryDirectory(prefix="brim-layering.") as tmp:
        tree = os.path.join(tmp, "t")
        build(tree)
        got, out = run(lint, tree)
        if got != "pass":
            print("selftest: the clean tree does not pass:\n" + out)
            wrong += 1
        for want, rel, line in CASES:
            build(tree)
            path = os.path.join(tree, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "a") as f:
                f.write(line + "\n")
            got, out = run(lint, tree)
            if got != want:
                print("selftest: '%s' in %s: lint says %s, want %s\n%s" %
                      (line, rel, got, want, out))
                wrong += 1
            elif want == "fail" and rel not in out:
                print("selftest: '%s' in %s: the message does not name the "
                      "file:\n%s" % (line, rel, out))
                wrong += 1
    if wrong:
        print("layering selftest: %d case(s) wrong" % wrong)
        return 1
    print("layering selftest: the clean tree and %d planted includes as "
          "expected" % len(CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
