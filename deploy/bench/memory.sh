#!/usr/bin/env bash
# deploy/bench/memory.sh - resident memory per item, brim-node against
# memcached -t 1: for each size (16-byte keys and 10-byte values, 32 and
# 100, 32 and 1024) and each of RUNS passes (default 3), start a fresh
# server, read its VmRSS, load ITEMS distinct items (default 1,000,000)
# with brim-bench's preload (one generator for both; 4 connections, so
# connection buffers stay out of the figure), read VmRSS again and the
# items the server reports (brim STATS keys, memcached curr_items), and
# stop it. Bytes per item = (RSS after - RSS before) / ITEMS: growth, not
# the absolute figure, so each server's fixed start-up memory (brim's
# partition array, memcached's first hash table) is left out; memcached
# allocates its 1 MiB slab pages as they fill (no -L), so its growth is
# what its items use. Both limits are far above the data: nothing is
# evicted. The order alternates between passes and each brim/memcached
# ratio is taken within one pass; it prints every pass, then per size the
# median bytes per item with [min, max] and the median ratio [min, max].
# Usage: deploy/bench/memory.sh [RUNS] [ITEMS]  (from the repo root, after
# a build; BRIM_BIN overrides build/bin; needs memcached; as root,
# memcached runs with -u root).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=deploy/lib.sh
. "$root/deploy/lib.sh"
brim_bench_args "${BASH_SOURCE[0]}" 2 "$@"   # --help; exit 2 on bad usage
bin=${BRIM_BIN:-$root/build/bin}
runs=${1:-3}
items=${2:-1000000}
sizes=${BRIM_MEMORY_SIZES:-"16:10 32:100 32:1024"}
brim_port=22311
mc_port=22211
out=$(mktemp -d)
. "$root/deploy/bench/servers.sh"
trap 'server_stop; rm -rf "$out"' EXIT
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

count_items() {   # target port: the items the server says it holds
    if [ "$1" = brim ]; then
        "$bin/brimctl" --server "127.0.0.1:$2" stats | awk '$1 == "keys" { print $2 }'
    else
        exec 3<>"/dev/tcp/127.0.0.1/$2"
        printf 'stats\r\nquit\r\n' >&3
        tr -d '\r' <&3 | awk '$2 == "curr_items" { print $3 }'
        exec 3<&-
    fi
}

measure() {   # target key_size value_size pass: one fresh server, one line
    local t=$1 k=$2 v=$3 port before after n
    if [ "$t" = brim ]; then port=$brim_port; else port=$mc_port; fi
    server_start "$t" "$port" 8192
    sleep 0.5
    before=$(rss_kb "$pid")
    nice -n 15 "$bin/brim-bench" --target "$t" --server "127.0.0.1:$port" \
        --connections 4 --pipeline 32 --keys "$items" --key-size "$k" \
        --value-size "$v" --get-ratio 1 --ops 1000 --quiet >/dev/null
    sleep 0.5
    after=$(rss_kb "$pid")
    n=$(count_items "$t" "$port")
    server_stop
    echo "$t $k $v $4 $before $after $n" >> "$out/raw"
    awk -v t="$t" -v k="$k" -v v="$v" -v p="$4" -v b="$before" -v a="$after" \
        -v n="$n" -v items="$items" 'BEGIN {
        printf "pass %d %-9s key %3d value %5d  rss %8d -> %8d KiB  " \
               "%7.1f bytes/item  items %d\n", p, t, k, v, b, a,
               (a - b) * 1024 / items, n }'
}

for pass in $(seq 1 "$runs"); do
    for s in $sizes; do
        k=${s%%:*} v=${s##*:}
        if [ $((pass % 2)) = 1 ]; then
            measure brim "$k" "$v" "$pass"; measure memcached "$k" "$v" "$pass"
        else
            measure memcached "$k" "$v" "$pass"; measure brim "$k" "$v" "$pass"
        fi
    done
done

python3 - "$out/raw" "$items" <<'PY'
import sys, statistics as st
raw, items = sys.argv[1], int(sys.argv[2])
per = {}   # (key, value) -> {target: {pass: bytes per item}}
short = []
for line in open(raw):
    t, k, v, p, b, a, n = line.split()
    per.setdefault((int(k), int(v)), {}).setdefault(t, {})[int(p)] = \
        (int(a) - int(b)) * 1024 / items
    if int(n) != items:
        short.append("%s key %s value %s pass %s: %s items" % (t, k, v, p, n))
def fmt(xs):
    return "%.1f [%.1f, %.1f]" % (st.median(xs), min(xs), max(xs))
def fmt4(xs):
    return "%.4g [%.4g, %.4g]" % (st.median(xs), min(xs), max(xs))
print()
print("bytes per item, %d items: median [min, max] of %d passes" %
      (items, len(next(iter(per.values()))["brim"])))
print("%-5s %-6s %-22s %-22s %s" % ("key", "value", "brim", "memcached",
                                    "brim/memcached"))
for (k, v), d in sorted(per.items(), key=lambda x: x[0][1]):
    ratios = [d["brim"][p] / d["memcached"][p] for p in d["brim"]]
    print("%-5d %-6d %-22s %-22s %s" % (k, v, fmt(list(d["brim"].values())),
          fmt(list(d["memcached"].values())), fmt4(ratios)))
for s in short:
    print("NOT ALL STORED: " + s)
sys.exit(1 if short else 0)
PY
