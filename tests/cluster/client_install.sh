#!/usr/bin/env bash
# tests/cluster/client_install.sh - install the build tree into a temporary
# prefix, then build a small program against the installed libbrim with
# nothing but `pkg-config --cflags --libs brim` and run it: it must find
# brim.h and <brim/status.h>, link -lbrim, and get ECONNREFUSED from a
# port nobody listens on.
#
#   client_install.sh BUILD_DIR CC [EXTRA_CFLAGS]
#
# EXTRA_CFLAGS: the sanitizer flags of a sanitized build, whose libbrim.so
# only loads into a program built with the same ones.
set -euo pipefail
build=${1:?usage: client_install.sh BUILD_DIR CC [EXTRA_CFLAGS]}
cc=${2:-cc}
read -r -a extra <<< "${3:-}"

prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >"$prefix/install.log"

pc=$(find "$prefix" -name brim.pc | head -n 1)
[ -n "$pc" ] || { echo "brim.pc not installed"; exit 1; }
for f in include/brim.h include/brim/status.h; do
    [ -f "$prefix/$f" ] || { echo "$f not installed"; exit 1; }
done
[ -n "$(find "$prefix" -name 'libbrim.so*' -print -quit)" ] \
    || { echo "libbrim.so not installed"; exit 1; }

port=$(python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$prefix/example.c" <<EOC
#include <stdio.h>
#include <string.h>

#include <brim.h>

int
main(void)
{
    struct brim_client *c;
    struct brim_opts    opts;
    char                err[BRIM_ERRBUF_LEN];
    int                 rc;

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
