#!/usr/bin/env bash
# deploy/bench/compare.sh - brim-node against memcached -t 1 and redis-server
# (persistence off) with one generator, brim-bench: each server pinned to
# CPU 0, the generator to CPU 1, GET:SET 9:1, 100,000 preloaded keys of 32
# bytes, 100-byte values, 50 connections, at pipeline depths 1 and 16.
# PASSES interleaved passes (default 7) of SECONDS each (default 5): one
# pass runs brim, memcached and redis back to back at one depth, so each
# pass gives one brim/peer ratio measured under the same noise. Prints every
# pass, the medians, and each ratio as its median with the min and max over
# the passes (the spread this shared machine's noise puts on it).
# Usage: deploy/bench/compare.sh [PASSES] [SECONDS]  (from the repo root,
# after a build; needs memcached, redis-server and taskset; as root,
# memcached runs with -u root).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=deploy/lib.sh
. "$root/deploy/lib.sh"
brim_bench_args "${BASH_SOURCE[0]}" 2 "$@"   # --help; exit 2 on bad usage
bin=$root/build/bin
passes=${1:-7}
secs=${2:-5}
out=$(mktemp -d)
pids=()
cleanup() {   # stop the servers by PID and wait, so their ports are free
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do
        for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    done
}
trap cleanup EXIT

taskset -c 0 "$bin/brim-node" --standalone --listen 127.0.0.1:21311 \
    --memory-mb 1024 --log-level warn & pids+=($!); brim_pid=$!
taskset -c 0 memcached -u root -t 1 -m 1024 -p 21211 -U 0 -l 127.0.0.1 & \
    pids+=($!); mc_pid=$!
taskset -c 0 redis-server --port 21379 --bind 127.0.0.1 --save '' \
    --appendonly no --loglevel warning & pids+=($!); rd_pid=$!
sleep 1

run() {   # target port pid depth pass
    taskset -c 1 "$bin/brim-bench" --target "$1" --server "127.0.0.1:$2" \
        --server-pid "$3" --connections 50 --pipeline "$4" --keys 100000 \
        --key-size 32 --value-size 100 --get-ratio 0.9 --duration "$secs" \
        --quiet --json | tail -n 1 > "$out/$1.$4.$5.json"
}
for pass in $(seq 1 "$passes"); do
    for depth in 1 16; do
        run brim 21311 "$brim_pid" "$depth" "$pass"
        run memcached 21211 "$mc_pid" "$depth" "$pass"
        run redis 21379 "$rd_pid" "$depth" "$pass"
    done
done
python3 - "$out" "$passes" <<'PY'
import json, sys, statistics as st
out, passes = sys.argv[1], int(sys.argv[2])
rows = {}
for t in ("brim", "memcached", "redis"):
    for d in (1, 16):
        runs = [json.load(open("%s/%s.%d.%d.json" % (out, t, d, p)))
                for p in range(1, passes + 1)]
        for r in runs:
            print("pass %-9s depth %2d  %9.0f ops/s  p99 %6.0f us" %
                  (t, d, r["ops_per_sec"], r["p99_us"]))
        rows[(t, d)] = {k: st.median(r[k] for r in runs if r.get(k) is not None)
                        for k in ("ops_per_sec", "p50_us", "p99_us", "p999_us",
                                  "server_cpu_us_per_op")
                        if any(r.get(k) is not None for r in runs)}
print()
print("medians of %d passes" % passes)
print("%-10s %5s %12s %8s %8s %8s %14s" % ("server", "depth", "ops/s", "p50 us",
      "p99 us", "p999 us", "server us/op"))
for (t, d), m in sorted(rows.items(), key=lambda x: (x[0][1], x[0][0])):
    print("%-10s %5d %12.0f %8.0f %8.0f %8.0f %14.2f" % (t, d,
          m["ops_per_sec"], m["p50_us"], m["p99_us"], m["p999_us"],
          m.get("server_cpu_us_per_op", float("nan"))))
print()
print("brim/peer ratios: median of the %d per-pass ratios [min, max]" % passes)
for d in (1, 16):
    for peer in ("memcached", "redis"):
        tput, p99 = [], []
        for p in range(1, passes + 1):
            b = json.load(open("%s/brim.%d.%d.json" % (out, d, p)))
            q = json.load(open("%s/%s.%d.%d.json" % (out, peer, d, p)))
            tput.append(b["ops_per_sec"] / q["ops_per_sec"])
            p99.append(b["p99_us"] / q["p99_us"])
        print("depth %2d: brim/%-9s throughput %.2fx [%.2f, %.2f], "
              "p99 %.2fx [%.2f, %.2f]" %
              (d, peer, st.median(tput), min(tput), max(tput),
               st.median(p99), min(p99), max(p99)))
PY
