#!/usr/bin/env bash
# deploy/bench/membership.sh - a join and a leave under verified load, with
# the figures of issue 4's acceptance points 1, 2 and 5 (eps 0.05):
#   1. three nodes, KEYS keys of 100 to 1,000 bytes loaded; brim-bench
#      --verify on 20,000 keys of its own with 8 connections; node4 joins,
#      its migration completes; the original node with the most partitions
#      leaves; the bench ends with lost, stale and errors counts;
#   2. per change: the plan (partitions by reason) before it, the committed
#      change's moves by reason, the partitions the nodes streamed for that
#      epoch (their logs), keys moved and churn (keys moved / ideal) from
#      `brimctl stats`; for the leave, the keys the leaver held at commit;
#   5. `brimctl stats` after the leave (every node within its cap).
# Usage: deploy/bench/membership.sh [KEYS] [BASE_PORT]  (defaults 100000
# and 32600; from a built tree). Exits 1 unless lost=0 stale=0 errors=0,
# every node is within its cap, and the streamed partitions equal the
# committed moves.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=deploy/lib.sh
. "$root/deploy/lib.sh"
brim_bench_args "${BASH_SOURCE[0]}" 2 "$@"   # --help; exit 2 on bad usage
bin=$root/build/bin
keys=${1:-100000}
port=${2:-32600}
coord=127.0.0.1:$port
dir=$(mktemp -d /tmp/brim-membership.XXXXXX)
cluster=$root/deploy/brim-cluster
# brim-cluster's cluster secret: plan needs it.
ctl() { BRIM_SECRET_FILE=$dir/secret "$bin/brimctl" --coordinator "$coord" "$@"; }
bench_pid=""
cleanup() {
    [ -z "$bench_pid" ] || kill "$bench_pid" 2>/dev/null || true
    "$cluster" down --dir "$dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT
fail=0

# The JSON field PATH (dotted) of `brimctl stats --json`.
stat() {
    ctl stats --json | python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[k]
print(v)' "$1"
}

# Wait (at most 60 s) until the migration of the committed epoch is over.
wait_migration() {
    local t0=$SECONDS
    while [ "$(stat migration.active)" != "False" ]; do
        [ $((SECONDS - t0)) -lt 60 ] || { echo "migration did not end"; return 1; }
        sleep 0.2
    done
    echo "migration done in about $((SECONDS - t0)) s"
}

# Partitions the nodes' logs say they streamed for epoch E: each sender logs
# "migrate: epoch E: N partitions to stream out" at the commit and
# "every outgoing partition is handed over: N partitions" at the end.
streamed() {
    local f sum=0 n
    for f in "$dir"/node*.log; do
        n=$(awk -v e="$1" '
            /migrate: epoch [0-9]+: [0-9]+ partitions to stream out/ {
                for (i = 1; i <= NF; i++) if ($i == "epoch") cur = $(i + 1) + 0 }
            /every outgoing partition is handed over: [0-9]+ partitions/ {
                if (cur == e) for (i = 1; i <= NF; i++)
                    if ($i == "over:") got += $(i + 1) }
            END { print got + 0 }' "$f")
        sum=$((sum + n))
    done
    echo "$sum"
}

# Compare the committed change's moves with the partitions streamed.
report_change() {   # WHAT
    local e arc cap total sent
    e=$(stat migration.epoch)
    arc=$(stat migration.moved_arc)
    cap=$(stat migration.moved_cap)
    total=$(stat migration.partitions_total)
    sent=$(streamed "$e")
    echo "$1: epoch $e moved arc=$arc cap=$cap (total $total); partitions streamed for epoch $e: $sent"
    echo "$1: keys moved $(stat migration.keys_moved), ideal $(stat migration.ideal_keys), churn $(stat migration.churn) (keys at commit $(stat migration.keys_at_commit))"
    [ "$sent" -eq "$total" ] || { echo "MISMATCH: streamed $sent != moved $total"; fail=1; }
}

echo "== up: 3 nodes (eps 0.05) in $dir"
"$cluster" up --nodes 3 --dir "$dir" --base-port "$port" --memory-mb 512 \
    --eps 0.05 >/dev/null
echo "== load $keys keys of 100-1000 bytes"
"$bin/brim-bench" --coordinator "$coord" --keys "$keys" --key-size 24 \
    --value-size 100-1000 --ops 1 --quiet | grep -E '^preload' || true
echo "== brim-bench --verify, 8 connections, 20000 keys of its own, 40 s"
"$bin/brim-bench" --coordinator "$coord" --verify --connections 8 \
    --keys 20000 --key-size 16 --value-size 100-1000 --duration 40 \
    --quiet >"$dir/bench.out" 2>&1 &
bench_pid=$!
sleep 3

echo "== plan join node4"
ctl plan join node4 | grep -E 'partitions_moved|moved_arc|moved_cap|churn'
"$cluster" add-node node4 --dir "$dir"
sleep 0.6
wait_migration
report_change join

leaver=$(ctl stats --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
n = [x for x in d["nodes"] if x["name"] in ("node1", "node2", "node3")]
print(max(n, key=lambda x: x["partitions"])["name"])')
held=$(ctl stats --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print([x for x in d["nodes"] if x["name"] == sys.argv[1]][0]["keys"])' "$leaver")
echo "== plan leave $leaver (holds $held keys, most partitions of the original nodes)"
ctl plan leave "$leaver" | grep -E 'partitions_moved|moved_arc|moved_cap'
BRIM_CLUSTER_LEAVE_S=60 "$cluster" remove-node "$leaver" --dir "$dir"
sleep 0.6
wait_migration
report_change leave

echo "== waiting for the bench to end"
wait "$bench_pid" || true
bench_pid=""
grep -E '^run:|^latency|^verify|lost=|^cluster' "$dir/bench.out"
grep -q 'lost=0 stale=0 errors=0' "$dir/bench.out" || fail=1

echo "== brimctl stats"
ctl stats
[ "$(stat within_cap)" = "True" ] || { echo "a node is above its cap"; fail=1; }
echo "logs: $dir"
exit "$fail"
