#!/usr/bin/env bash
# deploy/bench/migration.sh - how fast a join's migration streams, and what
# it costs the clients (issue 13, acceptance point 1). Per run: three nodes
# hold KEYS keys of 1 KiB (the default, 4,000,000, is about 4 GB); an
# open-loop brim-bench load of RATE ops/s (GET:SET 9:1 over all the keys,
# 64 connections, every reply's latency logged) runs 12 s, then node4 joins
# and takes about a quarter of the data. The window is node4's migration:
# from its commit to its last incoming partition complete (node4's log line
# "every incoming partition is complete: ... in T ms"). Printed per run:
# MB moved, MB/s over the window, and client p50/p99 over the window
# against a window of the same length just before the join; then the
# median run.
#
# Usage: deploy/bench/migration.sh [KEYS] [RATE] [CEILING] [RUNS] [BASE_PORT]
#   KEYS       keys of 1 KiB preloaded on three nodes (default 4000000)
#   RATE       the load's ops/s (default 10000)
#   CEILING    every node's --migrate-mb-per-s; 0 none, the default
#   RUNS       runs, each on a fresh cluster (default 3)
#   BASE_PORT  the coordinator's port, nodes above it (default 21700)
# Every node runs with --prefault (its --memory-mb of heap faulted in
# before it serves or joins: on the VM measured, first-touch page faults
# took 66% of the joiner's loop, docs/performance.md); PREFAULT=0 in the
# environment runs without it (PREFAULT=1, the default, with it; any
# other value is refused).
# Nothing starts a process inside either window: one logwait.py, started
# before the "before" window, watches node4's log, and node4 is added with
# `brim-cluster add-node --no-wait` (on the VMs measured, a `grep; sleep
# 0.2` poll in the window alone raised client p99 from 0.25 to 2.4 ms).
# BRIM_BENCH_DAMON=off (as root) pauses the kernel's DAMON monitor for the
# run (deploy/lib.sh brim_bench_damon; docs/performance.md).
# From a built tree (build/bin); about 40 s a run at the defaults on 2
# cores, with 4 GB of RSS in all.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=deploy/lib.sh
. "$root/deploy/lib.sh"
brim_bench_args "${BASH_SOURCE[0]}" 5 "$@"   # --help; exit 2 on bad usage
bin=$root/build/bin
keys=${1:-4000000}
rate=${2:-10000}
ceiling=${3:-0}
runs=${4:-3}
port=${5:-21700}
node_args="--migrate-mb-per-s $ceiling"
case "${PREFAULT:-1}" in
    0) ;;
    1) node_args="$node_args --prefault" ;;
    *) echo "${0##*/}: PREFAULT must be 0 or 1 (is \"$PREFAULT\")" >&2; exit 2 ;;
esac
coord=127.0.0.1:$port
cluster=$root/deploy/brim-cluster
before_s=12
# Each node's memory limit: a third of the data with room (1,200 bytes an
# item with the store's own), and 256 MB more.
memory_mb=$((keys * 1200 / 3 / 1000000 * 5 / 4 + 256))
top=$(mktemp -d /tmp/brim-migration.XXXXXX)
dir=
bpid=
wpid=
py=/usr/bin/python3   # Debian's: not a pyenv shim that starts a dozen processes
[ -x "$py" ] || py=$(command -v python3)
cleanup() {
    [ -z "$bpid" ] || kill "$bpid" 2>/dev/null || true
    [ -z "$wpid" ] || kill "$wpid" 2>/dev/null || true
    [ -z "$dir" ] || "$cluster" down --dir "$dir" >/dev/null 2>&1 || true
    brim_bench_damon_restore
}
trap cleanup EXIT
brim_bench_damon "${BASH_SOURCE[0]}"

echo "== $runs runs: $keys keys of 1 KiB on 3 nodes, node4 joins under" \
    "$rate ops/s; node args: $node_args; in $top"
for run in $(seq 1 "$runs"); do
    dir=$top/run$run
    mkdir -p "$dir"
    BRIM_NODE_ARGS="$node_args" "$cluster" up --nodes 3 \
        --dir "$dir" --base-port "$port" --memory-mb "$memory_mb" >/dev/null
    "$bin/brim-bench" --coordinator "$coord" --keys "$keys" --key-size 24 \
        --value-size 1024 --ops 1 --quiet >/dev/null
    "$bin/brim-bench" --coordinator "$coord" --connections 64 --rate "$rate" \
        --keys "$keys" --key-size 24 --value-size 1024 --get-ratio 0.9 \
        --no-preload --duration 600 --json --quiet \
        --latency-log "$dir/latency.log" >"$dir/bench.json" 2>"$dir/bench.err" &
    bpid=$!
    "$py" "$root/deploy/bench/logwait.py" --timeout 900 \
        --pid-file "$dir/node4.pid" "$dir/node4.log" \
        "every incoming partition is complete" >"$dir/logwait.out" &
    wpid=$!
    sleep "$before_s"
    # The join's time without a process (bash 5's microsecond clock).
    printf '%s000\n' "${EPOCHREALTIME/./}" >"$dir/join_ns"
    BRIM_NODE_ARGS="$node_args" "$cluster" add-node node4 --dir "$dir" \
        --no-wait >/dev/null
    if ! wait "$wpid"; then
        wpid=
        echo "run $run: node4 exited, or its migration did not end in" \
            "900 s (its log: $dir/node4.log)" >&2
        exit 1
    fi
    wpid=
    sleep 1
    kill -INT "$bpid"
    wait "$bpid" || { echo "run $run: brim-bench failed:" >&2; cat "$dir/bench.err" >&2; exit 1; }
    bpid=
    "$cluster" down --dir "$dir" >/dev/null 2>&1 || true
    "$py" "$root/deploy/bench/migration_window.py" "$dir" "$run" \
        | tee -a "$top/runs.txt"
    # What the joiner's prefault took, before its join's commit.
    sed -n 's/.*--prefault: \(.*heap faulted in.*\)/node4 --prefault: \1/p' "$dir/node4.log"
    dir=
done
"$py" "$root/deploy/bench/migration_window.py" --summary "$top/runs.txt"
echo "logs: $top"
