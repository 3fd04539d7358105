#!/bin/sh
# tests/lint/layering_selftest.sh - proves that layering.sh fails on each
# kind of violation and passes a clean tree: it builds small trees in a
# temporary directory and runs the lint on them.
# Usage: layering_selftest.sh PATH/TO/layering.sh
set -u

lint=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/brim-layering.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0

# put FILE LINE...: write the lines to FILE of the tree under test.
put() {
    f=$tmp/t/$1
    shift
    mkdir -p "$(dirname "$f")"
    printf '%s\n' "$@" > "$f"
}

# A clean tree: every include a layer may make.
clean() {
    rm -rf "$tmp/t"
    put common/ring.c '#include "common/ring.h"' '#include <brim/status.h>' \
        '#include <xxhash.h>' '#include <stdint.h>'
    put proto/wire.c '#include "common/defs.h"' '#include "proto/wire.h"' \
        '# include <msgpack.h>' '#include <brim/status.h>'
    put server/node/store.c '#include "common/ring.h"' \
        '#include "proto/wire.h"' '#include "server/conn.h"' \
        '#include <uv.h>' '#include <msgpack.h>'
    put client/lib/client.c '#include <brim.h>' '#include <brim/status.h>' \
        '#include "client/lib/route.h"' '#include "proto/topo.h"' \
        '#include <uv.h>'
    put client/include/brim.h '#include <brim/status.h>'
    put sim/main.c '#include "common/placement.h"' '#include "sim/sim.h"' \
        '#include <jansson.h>'
}

# expect WANT FILE LINE: add LINE to FILE of a clean tree, run the lint.
expect() {
    want=$1
    clean
    printf '%s\n' "$3" >> "$tmp/t/$2"
    if sh "$lint" "$tmp/t" > "$tmp/out" 2>&1; then got=pass; else got=fail; fi
    if [ "$got" != "$want" ]; then
        echo "selftest: '$3' in $2: lint says $got, want $want" >&2
        cat "$tmp/out" >&2
        fails=$((fails + 1))
    fi
}

clean
if ! sh "$lint" "$tmp/t" > "$tmp/out" 2>&1; then
    echo "selftest: the clean tree fails:" >&2
    cat "$tmp/out" >&2
    fails=$((fails + 1))
fi

expect fail common/ring.c '#include "proto/wire.h"'
expect fail common/ring.c '#include "server/conn.h"'
expect fail common/ring.c '#include "client/lib/route.h"'
expect fail common/ring.c '#include <brim.h>'
expect fail common/ring.c '#include "brim.h"'
expect fail common/ring.c '#include <uv.h>'
expect fail common/ring.c '#include <msgpack.h>'
expect fail common/ring.c '#include <msgpack/object.h>'
expect fail common/ring.c '#include "sim/sim.h"'
expect fail common/ring.c '#include "../server/conn.h"'
expect fail common/ring.c '  #  include "proto/frame.h"'
expect pass common/ring.c '#include "brim/status.h"'
expect fail proto/wire.c '#include "server/conn.h"'
expect fail proto/wire.c '#include "client/lib/route.h"'
expect fail proto/wire.c '#include <brim.h>'
expect fail proto/wire.c '#include <uv.h>'
expect fail server/node/store.c '#include "client/lib/route.h"'
expect fail server/node/store.c '#include <brim.h>'
expect fail client/lib/client.c '#include "server/conn.h"'
expect fail client/lib/client.c '#include "server/node/store.h"'
expect fail sim/main.c '#include "proto/wire.h"'
expect fail sim/main.c '#include "server/node/store.h"'
expect fail sim/main.c '#include "client/lib/route.h"'
expect fail sim/main.c '#include <uv.h>'
expect fail sim/main.c '#include <msgpack.h>'
expect fail sim/main.c '#include <brim.h>'
expect pass sim/main.c '#include <brim/status.h>'
expect pass sim/main.c '#include "common/ring.h"'
expect fail common/ring.h '#include "proto/wire.h"'

if [ "$fails" -ne 0 ]; then
    echo "layering selftest: $fails case(s) wrong" >&2
    exit 1
fi
echo "layering selftest: every case as expected"
