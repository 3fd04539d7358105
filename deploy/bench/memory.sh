#!/usr/bin/env bash
# deploy/bench/memory.sh - resident memory per item: load ITEMS items
# (default 1,000,000) of 32-byte keys and 100-byte values into brim-node
# and into memcached -t 1 through brim-bench's preload, and print each
# server's RSS before and after and the growth per item.
# Usage: deploy/bench/memory.sh [ITEMS]  (from the repo root, after a build)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=deploy/lib.sh
. "$root/deploy/lib.sh"
brim_bench_args "${BASH_SOURCE[0]}" 1 "$@"   # --help; exit 2 on bad usage
bin=$root/build/bin
items=${1:-1000000}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

"$bin/brim-node" --standalone --listen 127.0.0.1:22311 --memory-mb 2048 \
    --log-level warn & pids+=($!); brim_pid=$!
memcached -u root -t 1 -m 2048 -p 22211 -U 0 -l 127.0.0.1 & \
    pids+=($!); mc_pid=$!
sleep 1
for t in brim memcached; do
    if [ "$t" = brim ]; then pid=$brim_pid port=22311; else
        pid=$mc_pid port=22211; fi
    before=$(rss_kb "$pid")
    "$bin/brim-bench" --target "$t" --server "127.0.0.1:$port" \
        --keys "$items" --key-size 32 --value-size 100 --get-ratio 1 \
        --ops 1000 --quiet >/dev/null
    after=$(rss_kb "$pid")
    awk -v t="$t" -v b="$before" -v a="$after" -v n="$items" 'BEGIN {
        printf "%-10s rss before %8d KiB  after %8d KiB  %6.1f bytes/item\n",
               t, b, a, (a - b) * 1024 / n }'
done
