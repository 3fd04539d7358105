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
# Two more rows measure brim-node's memcached port (issue 14) with the same
# generator in its memcached text mode: brim-mc, the standalone node's port
# (every key local), and brim-mc3, one node's port of a 3-node cluster on
# CPU 0 (two thirds of the keys forwarded to the other two), whose server
# us/op is the CPU of all three nodes over the run (preload included)
# divided by its ops (the preload's SETs included).
# Usage: deploy/bench/compare.sh [PASSES] [SECONDS]  (from the repo root,
# after a build; needs memcached, redis-server and taskset; as root,
# memcached runs with -u root). Ports from $BRIM_COMPARE_BASE (default
# 21300) to 40 above it.
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
cl_pids=()
cleanup() {   # stop the servers by PID and wait, so their ports are free
    # The cluster's nodes at once (SIGQUIT): SIGTERM would be a leave.
    for p in "${cl_pids[@]}"; do kill -QUIT "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do
        for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    done
}
trap cleanup EXIT

b=${BRIM_COMPARE_BASE:-21300}
taskset -c 0 "$bin/brim-node" --standalone --listen "127.0.0.1:$((b + 11))" \
    --memcached-listen "127.0.0.1:$((b + 12))" \
    --memory-mb 1024 --log-level warn & pids+=($!); brim_pid=$!
taskset -c 0 memcached -u root -t 1 -m 1024 -p $((b + 1)) -U 0 -l 127.0.0.1 & \
    pids+=($!); mc_pid=$!
taskset -c 0 redis-server --port $((b + 2)) --bind 127.0.0.1 --save '' \
    --appendonly no --loglevel warning & pids+=($!); rd_pid=$!
# The 3-node cluster behind brim-mc3: a coordinator, nodes on b+21..23
# with memcached ports b+31..33; the generator talks to the first.
mkdir -p "$out/coord"
taskset -c 0 "$bin/brim-coord" --listen "127.0.0.1:$((b + 20))" \
    --data-dir "$out/coord" --log-level warn & pids+=($!)
sleep 0.5
for i in 1 2 3; do
    taskset -c 0 "$bin/brim-node" --name "n$i" \
        --coordinator "127.0.0.1:$((b + 20))" \
        --listen "127.0.0.1:$((b + 20 + i))" \
        --memcached-listen "127.0.0.1:$((b + 30 + i))" \
        --memory-mb 1024 --log-level warn & pids+=($!); cl_pids+=($!)
done
for _ in $(seq 1 300); do   # until the first node's port sees 3 members
    st=$( (exec 3<>"/dev/tcp/127.0.0.1/$((b + 31))" \
           && printf 'stats cluster\r\nquit\r\n' >&3 && cat <&3) 2>/dev/null \
          || true)
    case $st in *"cluster_members 3"*) break ;; esac
    sleep 0.1
done

cpu_s() {   # the CPU seconds (utime + stime) of the PIDs, summed
    local t=0 p f
    for p in "$@"; do
        f=($(sed 's/^.*) //' "/proc/$p/stat"))
        t=$((t + f[11] + f[12]))
    done
    echo "$t $(getconf CLK_TCK)"
}
run() {   # label target port pid depth pass
    taskset -c 1 "$bin/brim-bench" --target "$2" --server "127.0.0.1:$3" \
        --server-pid "$4" --connections 50 --pipeline "$5" --keys 100000 \
        --key-size 32 --value-size 100 --get-ratio 0.9 --duration "$secs" \
        --quiet --json | tail -n 1 > "$out/$1.$5.$6.json"
}
run_cluster() {   # depth pass: the bench's own figure replaced by 3 nodes'
    local before after
    before=$(cpu_s "${cl_pids[@]}")
    run brim-mc3 memcached $((b + 31)) "${cl_pids[0]}" "$1" "$2"
    after=$(cpu_s "${cl_pids[@]}")
    python3 - "$out/brim-mc3.$1.$2.json" "$before" "$after" <<'PY'
import json, sys
f = sys.argv[1]
t0, hz = map(int, sys.argv[2].split())
t1 = int(sys.argv[3].split()[0])
r = json.load(open(f))
# The CPU was read around the whole run, preload included: its SETs
# (one per key) count as ops too.
r["server_cpu_us_per_op"] = (t1 - t0) / hz * 1e6 / max(1, r["ops"] + r["keys"])
json.dump(r, open(f, "w"))
PY
}
for pass in $(seq 1 "$passes"); do
    for depth in 1 16; do
        run brim brim $((b + 11)) "$brim_pid" "$depth" "$pass"
        run memcached memcached $((b + 1)) "$mc_pid" "$depth" "$pass"
        run redis redis $((b + 2)) "$rd_pid" "$depth" "$pass"
        run brim-mc memcached $((b + 12)) "$brim_pid" "$depth" "$pass"
        run_cluster "$depth" "$pass"
    done
done
python3 - "$out" "$passes" <<'PY'
import json, sys, statistics as st
out, passes = sys.argv[1], int(sys.argv[2])
rows = {}
for t in ("brim", "memcached", "redis", "brim-mc", "brim-mc3"):
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
    for mine, peer in (("brim", "memcached"), ("brim", "redis"),
                       ("brim-mc", "memcached"), ("brim-mc3", "memcached")):
        tput, p99 = [], []
        for p in range(1, passes + 1):
            b = json.load(open("%s/%s.%d.%d.json" % (out, mine, d, p)))
            q = json.load(open("%s/%s.%d.%d.json" % (out, peer, d, p)))
            tput.append(b["ops_per_sec"] / q["ops_per_sec"])
            p99.append(b["p99_us"] / q["p99_us"])
        print("depth %2d: %s/%-9s throughput %.2fx [%.2f, %.2f], "
              "p99 %.2fx [%.2f, %.2f]" %
              (d, mine, peer, st.median(tput), min(tput), max(tput),
               st.median(p99), min(p99), max(p99)))
PY
