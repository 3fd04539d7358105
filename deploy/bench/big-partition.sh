#!/usr/bin/env bash
# deploy/bench/big-partition.sh - a join that streams big partitions
# (issue 13 item 2): three brim-nodes at P = 256; KEYS small keys (default
# 100,000) and one value of 1 MiB (the default --max-value-bytes) in each
# of up to three partitions that node4's join takes; an open-loop
# brim-bench --verify load of RATE ops/s (default 10,000) before and during
# the join. Prints the stream's duration, each node's most-late heartbeat
# (before the bench and at the end) against a tenth of dead-after, and the
# bench's p50/p99 before and during. Fails if a node is declared dead, a
# lease expires, a record reads back wrong, or the bench is not
# lost=0 stale=0 errors=0. Timings are printed, never judged.
# Usage: deploy/bench/big-partition.sh [KEYS] [RATE]  (from a built tree)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=deploy/lib.sh
. "$root/deploy/lib.sh"
brim_bench_args "${BASH_SOURCE[0]}" 2 "$@"   # --help; exit 2 on bad usage
exec /usr/bin/python3 "$root/tests/cluster/big_partition.py" \
    --bin "$root/build/bin" --report --keys "${1:-100000}" --rate "${2:-10000}"
