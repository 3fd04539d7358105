#!/usr/bin/env bash
# tests/soak/soak.sh - the soak run of issue 6: brim-bench --verify against
# a 4-node local cluster (deploy/brim-cluster) for M minutes while a node
# joins or leaves every 30 s and one node is SIGKILLed and restarted once.
#
#   soak.sh [--minutes M] [--base-port P] [--bin DIR] [--keep]
#
# The bench runs in consecutive 60 s segments (--no-preload after the
# first), so each minute has its own lost/stale/errors and latency
# percentiles. A background driver alternates add-node node5 and
# remove-node node5 every 30 s (4 nodes on average) and, once, 40 s into
# minute floor(M/2)+1, SIGKILLs node2 and starts it again at once with the
# very command line it had (read from /proc/PID/cmdline: same name, port,
# partitions and memory limit), a new incarnation. brim-cluster add-node
# would restart the name too, but on a new port.
#
# Resident memory (VmRSS) of the coordinator, every node and the bench is
# sampled every 5 s; tests/soak/soak_report.py prints the table (per
# minute p50/p99/p99.9, ops/s, lost/stale/errors; RSS at start and end)
# and the checks, and gives the exit status: 0 all checks hold, 1 one
# failed (or the run could not go on), 2 bad usage.
#
# Every process is stopped by PID (brim-cluster down; the bench and the
# driver by their PIDs) on any exit. Logs are removed after a passing run
# unless --keep (or BRIM_KEEP_DIR=DIR: kept under DIR) is given; a failing
# run keeps them and prints where.
set -u

PROG=soak.sh
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CLUSTER=$ROOT/deploy/brim-cluster
MINUTES=10
BASE=""
BIN=${BRIM_BIN:-$ROOT/build/bin}
KEEP=0
SEGMENT_S=60            # one bench run, one row of the table
CHANGE_S=30             # a join or a leave this often
MEMORY_MB=256           # each node's --memory-mb
VICTIM=node2            # the node killed and restarted
EXTRA=node5             # the node that joins and leaves
# brim-bench: 200,000 keys of 100 to 3,000 bytes (about 310 MB in all,
# 60 to 90 MB a node): well inside 256 MiB, so no eviction spoils --verify.
BENCH_ARGS=(--target brim --verify --key-prefix soak: --keys 200000
            --value-size 100-3000 --connections 16 --threads 2
            --timeout 5000 --json --quiet)

usage() {
    sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" \
        | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'
}

die() { echo "$PROG: $*" >&2; exit 1; }
usage_err() { echo "$PROG: $*" >&2; echo "try: $PROG --help" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
    -h|--help) usage; exit 0 ;;
    --minutes) MINUTES=${2-}; shift 2 || usage_err "--minutes needs a value" ;;
    --base-port) BASE=${2-}; shift 2 || usage_err "--base-port needs a value" ;;
    --bin) BIN=${2-}; shift 2 || usage_err "--bin needs a value" ;;
    --keep) KEEP=1; shift ;;
    *) usage_err "unknown argument: $1" ;;
    esac
done
[[ "$MINUTES" =~ ^[0-9]+$ ]] && [ "$MINUTES" -ge 1 ] && [ "$MINUTES" -le 1440 ] \
    || usage_err "--minutes: 1 to 1440, not '$MINUTES'"
for b in brim-coord brim-node brim-bench; do
    [ -x "$BIN/$b" ] || usage_err "$BIN/$b not found (--bin DIR or BRIM_BIN)"
done
command -v python3 >/dev/null || die "python3 is needed for the report"

# A base port below the ephemeral range with the 10 ports after it free
# (the coordinator, five nodes, room for brim-cluster's next-free-port
# search) and their memcached ports (tests/support/ports.py).
if [ -z "$BASE" ]; then
    BASE=$(python3 "$(dirname "${BASH_SOURCE[0]}")/../support/ports.py" \
        --cluster 10) || die "no free port range (tests/support/ports.py)"
fi
[[ "$BASE" =~ ^[0-9]+$ ]] && [ "$BASE" -ge 1024 ] && [ "$BASE" -le 65000 ] \
    || usage_err "--base-port: 1024 to 65000, not '$BASE'"

DIR=$(mktemp -d /tmp/brim-soak.XXXXXX) || die "mktemp failed"
export BRIM_BIN=$BIN
# A leave under load streams the leaver's partitions first.
export BRIM_CLUSTER_LEAVE_S=90
COORD=127.0.0.1:$BASE
T0=0                    # ms: the first segment's start
BENCH_PID=""
DRIVER_PID=""

now_ms() { local t=$EPOCHREALTIME; echo $(( ${t%.*} * 1000 + 10#${t#*.} / 1000 )); }
rel_s() { awk -v a="$1" -v b="$T0" 'BEGIN { printf "%.1f", (a - b) / 1000 }'; }
log() { echo "[$(rel_s "$(now_ms)") s] $*"; }

# True while PID runs (a zombie counts as gone).
alive() {
    kill -0 "$1" 2>/dev/null || return 1
    [ "$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]
}

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# One line per live process in DIR/rss.tsv: ms (from T0) TAG PROCESS PID
# RSS_KIB.
sample_rss() {   # TAG
    local tag=$1 f name pid kib t
    t=$(( $(now_ms) - T0 ))
    for f in "$DIR"/coord.pid "$DIR"/node*.pid; do
        [ -e "$f" ] || continue
        name=$(basename "$f" .pid)
        pid=$(cat "$f" 2>/dev/null) || continue
        [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" || continue
        kib=$(rss_kib "$pid")
        [ -n "$kib" ] && printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$tag" "$name" \
            "$pid" "$kib" >>"$DIR/rss.tsv"
    done
    if [ -n "$BENCH_PID" ] && alive "$BENCH_PID"; then
        kib=$(rss_kib "$BENCH_PID")
        [ -n "$kib" ] && printf '%s\t%s\tbench\t%s\t%s\n' "$t" "$tag" \
            "$BENCH_PID" "$kib" >>"$DIR/rss.tsv"
    fi
}

# DIR/events.tsv: ms EVENT NAME RC DETAIL.
event() {
    printf '%s\t%s\t%s\t%s\t%s\n' $(( $(now_ms) - T0 )) "$1" "$2" "$3" "$4" \
        >>"$DIR/events.tsv"
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    touch "$DIR/stop"
    [ -n "$BENCH_PID" ] && alive "$BENCH_PID" && kill -KILL "$BENCH_PID" 2>/dev/null
    if [ -n "$DRIVER_PID" ] && alive "$DRIVER_PID"; then
        kill -TERM "$DRIVER_PID" 2>/dev/null
        wait "$DRIVER_PID" 2>/dev/null
    fi
    "$CLUSTER" down --dir "$DIR" >"$DIR/down.log" 2>&1
    if [ -n "${BRIM_KEEP_DIR:-}" ]; then
        mkdir -p "$BRIM_KEEP_DIR" && cp -r "$DIR" "$BRIM_KEEP_DIR/" \
            && echo "logs kept in $BRIM_KEEP_DIR/$(basename "$DIR")"
    fi
    if [ "$rc" = 0 ] && [ "$KEEP" = 0 ]; then
        rm -rf "$DIR"
    else
        echo "logs and figures in $DIR"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# How often VICTIM's log says it joined.
joins() { grep -c "joined via coordinator" "$DIR/$VICTIM.log"; }

# Sleep until DUE ms after T0, or until DIR/stop appears (then false).
sleep_until() {
    until [ $(( $(now_ms) - T0 )) -ge "$1" ]; do
        [ -e "$DIR/stop" ] && return 1
        sleep 0.2
    done
    [ ! -e "$DIR/stop" ]
}

# SIGKILL VICTIM and start it again at once with its own command line.
kill_restart() {
    local pid cmd joined deadline
    pid=$(cat "$DIR/$VICTIM.pid" 2>/dev/null)
    if ! [[ "$pid" =~ ^[0-9]+$ ]] || ! alive "$pid"; then
        event kill "$VICTIM" 1 "not running"
        return 1
    fi
    mapfile -d '' cmd <"/proc/$pid/cmdline"
    joined=$(joins)
    kill -KILL "$pid"
    event kill "$VICTIM" 0 "pid $pid"
    while alive "$pid"; do sleep 0.02; done
    "${cmd[@]}" >>"$DIR/$VICTIM.log" 2>&1 </dev/null &
    echo $! >"$DIR/$VICTIM.pid"
    event restart "$VICTIM" 0 "pid $! (${cmd[*]})"
    deadline=$((SECONDS + 30))
    until [ "$(joins)" -gt "$joined" ]; do
        if [ $SECONDS -ge $deadline ]; then
            event rejoined "$VICTIM" 1 "no 'joined via coordinator' within 30 s"
            return 1
        fi
        sleep 0.05
    done
    event rejoined "$VICTIM" 0 "$(grep "joined via coordinator" \
        "$DIR/$VICTIM.log" | tail -n 1 | sed 's/^.*] //')"
}

# The membership driver: every CHANGE_S an add or a remove of EXTRA, and
# the kill once; until DIR/stop appears. Times are from T0.
driver() {
    local j=1 due kill_due killed=0 op rc out
    trap 'exit 0' TERM
    kill_due=$(( ((MINUTES / 2) * SEGMENT_S + 40) * 1000 ))
    while [ ! -e "$DIR/stop" ]; do
        due=$((j * CHANGE_S * 1000))
        if [ $killed = 0 ] && [ $kill_due -le $due ]; then
            sleep_until "$kill_due" || break
            kill_restart
            killed=1
            continue
        fi
        sleep_until "$due" || break
        if [ $((j % 2)) = 1 ]; then op=add-node; else op=remove-node; fi
        event "$op" "$EXTRA" start ""
        out=$("$CLUSTER" "$op" "$EXTRA" --dir "$DIR" 2>&1)
        rc=$?
        event "$op" "$EXTRA" "$rc" "$(echo "$out" | tr '\n\t' '  ')"
        j=$((j + 1))
    done
}

echo "$PROG: $MINUTES minute(s), 4 nodes of --memory-mb $MEMORY_MB," \
     "coordinator $COORD, dir $DIR"
out=$("$CLUSTER" up --nodes 4 --dir "$DIR" --base-port "$BASE" \
      --memory-mb "$MEMORY_MB" 2>&1) \
    || { echo "$out"; die "brim-cluster up failed"; }
echo "$out" | grep "committed"
{
    printf 'minutes\t%s\nsegment_s\t%s\nmemory_mb\t%s\n' \
        "$MINUTES" "$SEGMENT_S" "$MEMORY_MB"
    printf 'victim\t%s\nextra\t%s\ncoordinator\t%s\n' "$VICTIM" "$EXTRA" \
        "$COORD"
    printf 'bench\t%s %s\n' "$BIN/brim-bench --coordinator $COORD" \
        "${BENCH_ARGS[*]} --duration $SEGMENT_S"
} >"$DIR/run.tsv"
T0=$(now_ms)
sample_rss start
driver >"$DIR/driver.log" 2>&1 &
DRIVER_PID=$!

for seg in $(seq 1 "$MINUTES"); do
    extra=()
    [ "$seg" -gt 1 ] && extra=(--no-preload)
    start=$(now_ms)
    "$BIN/brim-bench" --coordinator "$COORD" "${BENCH_ARGS[@]}" \
        --duration "$SEGMENT_S" --seed "$seg" "${extra[@]}" \
        >"$DIR/bench.$seg.out" 2>"$DIR/bench.$seg.err" </dev/null &
    BENCH_PID=$!
    # Sample every 5 s (the bench too) until the bench exits; bounded.
    next=$((start + 5000))
    limit=$((start + (SEGMENT_S + 120) * 1000))
    while alive "$BENCH_PID"; do
        t=$(now_ms)
        if [ "$t" -ge "$next" ]; then
            sample_rss "m$seg"
            next=$((next + 5000))
        fi
        if [ "$t" -ge "$limit" ]; then
            log "brim-bench minute $seg still runs after" \
                "$((SEGMENT_S + 120)) s: KILL"
            kill -KILL "$BENCH_PID"
        fi
        sleep 0.2
    done
    wait "$BENCH_PID"
    rc=$?
    end=$(now_ms)
    BENCH_PID=""
    sample_rss "m$seg.end"
    json=$(grep '^{' "$DIR/bench.$seg.out" | tail -n 1)
    [ -n "$json" ] || json=null
    printf '{"segment":%d,"start_ms":%d,"end_ms":%d,"rc":%d,"bench":%s}\n' \
        "$seg" $((start - T0)) $((end - T0)) "$rc" "$json" >>"$DIR/segments.jsonl"
    log "minute $seg: $(grep -E '^(lost=|run:|latency)' \
        "$DIR/bench.$seg.out" | tr '\n' ' ')"
done

touch "$DIR/stop"
# The driver finishes the change it is in (a leave is bounded by
# BRIM_CLUSTER_LEAVE_S), then exits.
for _ in $(seq 1 600); do
    alive "$DRIVER_PID" || break
    sleep 0.2
done
alive "$DRIVER_PID" && kill -TERM "$DRIVER_PID"
wait "$DRIVER_PID" 2>/dev/null
DRIVER_PID=""
sample_rss end

python3 "$HERE/soak_report.py" "$DIR"
