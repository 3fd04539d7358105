#!/usr/bin/env bash
# deploy/bench/migration.sh - how fast a join's migration streams, and what
# it costs the clients (issue 4, acceptance point 4): three nodes hold
# KEYS keys of 1 KiB; brim-bench runs open loop at RATE ops/s over 8
# connections (GET:SET 9:1 on 20,000 of those keys); a RUN_S run gives the
# p99 before the join; in a second RUN_S run node4 joins 0.5 s in. The
# receiver logs its migration's keys, bytes and time ("every incoming
# partition is complete"); the script prints that line, both p99 and their
# ratio.
# Usage: deploy/bench/migration.sh [KEYS] [RATE] [RUN_S] [BASE_PORT]
# (defaults 100000, 20000, 3, 32700; from a built tree).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=deploy/lib.sh
. "$root/deploy/lib.sh"
brim_bench_args "${BASH_SOURCE[0]}" 4 "$@"   # --help; exit 2 on bad usage
bin=$root/build/bin
keys=${1:-100000}
rate=${2:-20000}
run_s=${3:-3}
port=${4:-32700}
coord=127.0.0.1:$port
dir=$(mktemp -d /tmp/brim-migration.XXXXXX)
cluster=$root/deploy/brim-cluster
trap '"$cluster" down --dir "$dir" >/dev/null 2>&1 || true' EXIT

bench() {   # OUT
    "$bin/brim-bench" --coordinator "$coord" --connections 8 --rate "$rate" \
        --keys 20000 --key-size 24 --value-size 1024 --get-ratio 0.9 \
        --no-preload --duration "$run_s" --json --quiet | tail -n 1 >"$1"
}
p99() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["p99_us"])' "$1"
}

echo "== up: 3 nodes, eps 0.05, in $dir"
"$cluster" up --nodes 3 --dir "$dir" --base-port "$port" --memory-mb 512 \
    >/dev/null
echo "== load $keys keys of 1 KiB"
"$bin/brim-bench" --coordinator "$coord" --keys "$keys" --key-size 24 \
    --value-size 1024 --ops 1 --quiet | grep -E '^preload' || true
echo "== before: open loop $rate ops/s, 8 connections, $run_s s"
bench "$dir/before.json"
echo "== during: the same, node4 joins 0.5 s in"
bench "$dir/during.json" &
bpid=$!
sleep 0.5
"$cluster" add-node node4 --dir "$dir"
wait "$bpid"
deadline=$((SECONDS + 60))
until grep -q "every incoming partition is complete" "$dir/node4.log"; do
    [ $SECONDS -lt $deadline ] || { echo "migration did not end"; exit 1; }
    sleep 0.2
done
grep -o "migrate: every incoming partition is complete.*" "$dir/node4.log" | head -n 1
before=$(p99 "$dir/before.json")
during=$(p99 "$dir/during.json")
python3 - "$before" "$during" "$dir/before.json" "$dir/during.json" <<'EOF'
import json, sys
b, d = float(sys.argv[1]), float(sys.argv[2])
for name, f in (("before", sys.argv[3]), ("during", sys.argv[4])):
    r = json.load(open(f))
    print("%s: %.0f ops/s, p50 %.0f us, p99 %.0f us, errors %d"
          % (name, r["ops_per_sec"], r["p50_us"], r["p99_us"], r["errors"]))
print("p99 during / before: %.2fx" % (d / b if b > 0 else float("nan")))
EOF
echo "logs: $dir"
