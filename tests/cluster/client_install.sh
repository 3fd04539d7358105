#!/usr/bin/env bash
# tests/cluster/client_install.sh - install the build tree into a temporary
# prefix, then build a small program against the installed libbrim with
# nothing but `pkg-config --cflags --libs brim` and run it: it must find
# brim.h, <brim/admin.h> and <brim/status.h>, link -lbrim, and get
# ECONNREFUSED from a port nobody listens on. Then the steps of docs/client.md, "Building
# against libbrim": built with -Wl,-rpath it runs without LD_LIBRARY_PATH;
# built without, it needs LD_LIBRARY_PATH. Given CLIENT_MD and BRIM_NODE,
# the program of "A first program", taken from CLIENT_MD, is built the
# documented way and must print "hello" from a brim-node on a free port.
#
#   client_install.sh BUILD_DIR CC [EXTRA_CFLAGS [CLIENT_MD [BRIM_NODE]]]
#
# EXTRA_CFLAGS: the sanitizer flags of a sanitized build, whose libbrim.so
# only loads into a program built with the same ones.
set -euo pipefail
build=${1:?usage: client_install.sh BUILD_DIR CC [EXTRA_CFLAGS [MD [NODE]]]}
cc=${2:-cc}
read -r -a extra <<< "${3:-}"
client_md=${4:-}
node_bin=${5:-}

prefix=$(mktemp -d)
node_pid=""
cleanup() {
    if [ -n "$node_pid" ]; then
        kill "$node_pid" 2>/dev/null || true
        for _ in $(seq 30); do
            kill -0 "$node_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$node_pid" 2>/dev/null || true
        wait "$node_pid" 2>/dev/null || true
    fi
    rm -rf "$prefix"
}
trap cleanup EXIT
cmake --install "$build" --prefix "$prefix" >"$prefix/install.log"

pc=$(find "$prefix" -name brim.pc | head -n 1)
[ -n "$pc" ] || { echo "brim.pc not installed"; exit 1; }
for f in include/brim.h include/brim/status.h include/brim/admin.h; do
    [ -f "$prefix/$f" ] || { echo "$f not installed"; exit 1; }
done
[ -n "$(find "$prefix" -name 'libbrim.so*' -print -quit)" ] \
    || { echo "libbrim.so not installed"; exit 1; }

port=$(python3 "$(dirname "$0")/../support/ports.py")
cat >"$prefix/example.c" <<EOC
#include <stdio.h>
#include <string.h>

#include <brim.h>
#include <brim/admin.h>

int
main(void)
{
    struct brim_client *c;
    struct brim_opts    opts;
    char                err[BRIM_ERRBUF_LEN];
    int                 rc;

    /* <brim/admin.h> is installed, compiles on its own and links. */
    if (strcmp(brim_node_state_name(BRIM_NODE_UP), "up") != 0) {
        return 1;
    }
    memset(&opts, 0, sizeof(opts));
    opts.server_addr = "127.0.0.1:$port";
    opts.connect_timeout_ms = 500;
    rc = brim_connect(&opts, &c, err);
    printf("%s %s\n", brim_err_name(rc), brim_strerror(rc));
    return rc == BRIM_ECONNREFUSED ? 0 : 1;
}
EOC
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --cflags --libs brim)
echo "pkg-config --cflags --libs brim: $flags"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Werror "${extra[@]}" -o "$prefix/example" \
    "$prefix/example.c" $flags
libdir=$(pkg-config --variable=libdir brim)
out=$(LD_LIBRARY_PATH=$libdir "$prefix/example")
echo "example: $out"
[ "$out" = "CONNREFUSED connection refused" ]

# docs/client.md: without -rpath the loader cannot find libbrim.so.0 in a
# prefix of one's own (the user's report); with it, no LD_LIBRARY_PATH.
unset LD_LIBRARY_PATH
if "$prefix/example" >/dev/null 2>&1; then
    # Not a failure: a libbrim installed system-wide is found this way.
    echo "note: built without -rpath, the program found a libbrim.so.0"
fi
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Werror "${extra[@]}" -o "$prefix/example_rpath" \
    "$prefix/example.c" $flags -Wl,-rpath,"$libdir"
out=$("$prefix/example_rpath")
echo "example with -rpath: $out"
[ "$out" = "CONNREFUSED connection refused" ]

[ -n "$client_md" ] && [ -x "$node_bin" ] || {
    echo "no CLIENT_MD or BRIM_NODE: the documented program is not run"
    exit 0
}
# "A first program", as docs/client.md has it, on a brim-node of its own
# (the page's 127.0.0.1:11311 becomes a free port).
awk '/^## A first program/ { f = 1 } f && /^```c/ { g = 1; next }
     g && /^```/ { exit } g { print }' "$client_md" >"$prefix/app.c"
grep -q '127.0.0.1:11311' "$prefix/app.c" \
    || { echo "no program with 127.0.0.1:11311 in $client_md"; exit 1; }
port=$(python3 "$(dirname "$0")/../support/ports.py")
sed -i "s/127\.0\.0\.1:11311/127.0.0.1:$port/" "$prefix/app.c"
"$node_bin" --standalone --listen "127.0.0.1:$port" >"$prefix/node.log" 2>&1 &
node_pid=$!
for _ in $(seq 100); do
    python3 -c 'import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port" \
        2>/dev/null && break
    sleep 0.1
done
# The documented commands (PREFIX is $prefix).
# shellcheck disable=SC2046
"$cc" -std=c11 "${extra[@]}" -o "$prefix/app" "$prefix/app.c" \
    $(pkg-config --cflags --libs brim) \
    -Wl,-rpath,"$(pkg-config --variable=libdir brim)"
out=$("$prefix/app")
echo "docs/client.md's program: $out"
[ "$out" = "hello" ]
