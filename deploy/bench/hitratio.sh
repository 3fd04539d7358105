#!/usr/bin/env bash
# deploy/bench/hitratio.sh - hit ratio under a memory limit, brim-node
# against memcached -t 1 at the same limit (MIB MiB, default 64: about a
# third of the data): brim-bench preloads KEYS keys (default 1,000,000;
# 32-byte keys, 100-byte values), which evicts, then runs OPS requests
# (default 1,000,000) with Zipf 0.99 key popularity, GET:SET 9:1, through
# 4 connections at pipeline depth 8 (at 16, memcached -m 64 answers some
# preload SETs "out of memory storing object"; a pass that has errors
# says how many). The hit ratio is the GETs that found their key. Each
# of PASSES passes (default 3) starts both servers fresh, in alternating
# order; prints every pass and each server's median [min, max].
# Usage: deploy/bench/hitratio.sh [PASSES] [MIB] [KEYS] [OPS]  (from the
# repo root, after a build; BRIM_BIN overrides build/bin; needs memcached;
# as root, memcached runs with -u root).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${BRIM_BIN:-$root/build/bin}
# shellcheck source=deploy/lib.sh
. "$root/deploy/lib.sh"
brim_bench_args "${BASH_SOURCE[0]}" 4 "$@"   # --help; exit 2 on bad usage
passes=${1:-3}
mib=${2:-64}
keys=${3:-1000000}
ops=${4:-1000000}
out=$(mktemp -d)
. "$root/deploy/bench/servers.sh"
trap 'server_stop; rm -rf "$out"' EXIT

run() {   # target pass: one fresh server, one line of JSON kept
    local t=$1 port
    if [ "$t" = brim ]; then port=22312; else port=22212; fi
    server_start "$t" "$port" "$mib"
    nice -n 15 "$bin/brim-bench" --target "$t" --server "127.0.0.1:$port" \
        --connections 4 --pipeline 8 --keys "$keys" --key-size 32 \
        --value-size 100 --zipf 0.99 --get-ratio 0.9 --ops "$ops" --quiet \
        --json 2>"$out/$t.$2.err" | tail -n 1 > "$out/$t.$2.json" || true
    server_stop
}
for pass in $(seq 1 "$passes"); do
    if [ $((pass % 2)) = 1 ]; then run brim "$pass"; run memcached "$pass"
    else run memcached "$pass"; run brim "$pass"; fi
done
python3 - "$out" "$passes" "$mib" <<'PY'
import json, sys, statistics as st
out, passes, mib = sys.argv[1], int(sys.argv[2]), sys.argv[3]
res = {}
for t in ("brim", "memcached"):
    for p in range(1, passes + 1):
        r = json.load(open("%s/%s.%d.json" % (out, t, p)))
        h = r["hits"] / r["gets"]
        res.setdefault(t, []).append(h)
        print("pass %d %-9s gets %d hits %d hit ratio %.4f errors %d" %
              (p, t, r["gets"], r["hits"], h, r["errors"]))
print()
print("hit ratio at %s MiB: median [min, max] of %d passes" % (mib, passes))
for t, xs in res.items():
    print("%-10s %.4f [%.4f, %.4f]" % (t, st.median(xs), min(xs), max(xs)))
PY
