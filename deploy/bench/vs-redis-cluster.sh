#!/usr/bin/env bash
# deploy/bench/vs-redis-cluster.sh - brim against Redis Cluster through a
# join and a leave, one run, same machine, same data (issue 13, item 5 and
# acceptance point 2). The two systems run one after the other, never at
# the same time:
#   brim:  three nodes (deploy/brim-cluster) hold KEYS keys of 1 KiB;
#          node4 joins (brim-cluster add-node); then the original node
#          holding the most bytes leaves (brimctl leave NAME --wait);
#   redis: three masters (redis-server, cluster-enabled yes, --save ''
#          --appendonly no) hold the same keys; a fourth joins
#          (redis-cli --cluster add-node, then rebalance
#          --cluster-use-empty-masters, then check); then the original
#          master holding the most keys leaves (its slots resharded to
#          the other three, a third each, then del-node, then check).
# Each change runs under its own brim-bench --verify --rate RATE load
# (32 connections, GET:SET 9:1, --verify's DELs and short TTLs) whose
# preload writes the KEYS keys (24-byte keys over every slot and
# partition, no hash tag); the change starts WINDOW s after the measured
# part begins and the load is stopped (SIGINT) 2 s after it is balanced.
# "Balanced": from the first operator command until the new node owns its
# share (brim: the migration is complete in `brimctl stats`; redis: the
# last command returned and `redis-cli --cluster check` shows no open
# slot; an open slot is fixed with `--cluster fix`, said and counted).
# Per system and change: seconds until balanced, MB moved (keys moved x
# (24 + 1024) bytes) and MB/s over those seconds, client p50/p99 over the
# WINDOW s before and over the change (from brim-bench --latency-log),
# errors, lost and stale of the load, operator commands; a markdown table
# at the end.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: deploy/bench/vs-redis-cluster.sh [--keys N] [--rate OPS] [--window S]
           [--connections C] [--brim-port P] [--redis-port P] [--dir DIR]
           [--only brim|redis]

A join and a leave on brim and on Redis Cluster, one after the other, on
the same data and the same load; prints a markdown table.

  --keys N        keys of 1 KiB (24-byte keys) in each system (300000)
  --rate OPS      brim-bench --rate, open loop with --verify (10000)
  --window S      the "before" window, seconds (10)
  --connections C the load's connections, pipeline 1 (32): fewer queue
                  the open-loop load behind their own replies
  --brim-port P   the coordinator's port, in 35000-35095, nodes on the
                  next four; the first free base from P up is taken
                  (35000)
  --redis-port P  the first redis-server's port, in 35100-35196, four
                  servers, bus ports +10000; the first free base from P
                  up is taken (35100)
  --dir DIR       logs and latency logs (default a new /tmp/brim-vs.*)
  --only SYSTEM   run only brim or only redis (for debugging)
  --help          this text

Binaries come from build/bin of this tree; redis-server and redis-cli
(Debian's redis 7.0) from PATH. Every brim-node runs with --prefault
(its 512 MiB of heap faulted in before it serves or joins; node4's is
inside brim's join time); PREFAULT=0 runs without (1, the default,
with; any other value is refused). BRIM_NODE_ARGS is
added to every brim-node (deploy/brim-cluster). BRIM_BENCH_DAMON=off (as
root) pauses the kernel's DAMON monitor for the run (deploy/lib.sh:
on the VMs measured it stalls every process for tens of ms every 0.5 s
once GBs are resident). Every wait is bounded; every process
started is stopped by its PID on exit. Exit 1 when a step fails or a
load reports errors, lost or stale reads; 2 on bad usage.
EOF
}

die() { echo "vs-redis-cluster: $*" >&2; exit 1; }
usage_err() { echo "vs-redis-cluster: $* (see --help)" >&2; exit 2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=deploy/lib.sh
. "$root/deploy/lib.sh"   # brim_bench_damon (BRIM_BENCH_DAMON=off, see --help)
bin=$root/build/bin
cluster=$root/deploy/brim-cluster
keys=300000
rate=10000
window=10
conns=32
bport=35000
rport=35100
dir=""
only=""
# --prefault on every brim node unless PREFAULT=0 (see --help).
case "${PREFAULT:-1}" in
    0) ;;
    1) export BRIM_NODE_ARGS="--prefault${BRIM_NODE_ARGS:+ $BRIM_NODE_ARGS}" ;;
    *) echo "${0##*/}: PREFAULT must be 0 or 1 (is \"$PREFAULT\")" >&2; exit 2 ;;
esac
while [ $# -gt 0 ]; do
    case "$1" in
    -h|--help) usage; exit 0 ;;
    --keys) keys=${2-}; shift 2 || usage_err "--keys needs a value" ;;
    --rate) rate=${2-}; shift 2 || usage_err "--rate needs a value" ;;
    --window) window=${2-}; shift 2 || usage_err "--window needs a value" ;;
    --connections) conns=${2-}; shift 2 || usage_err "--connections needs a value" ;;
    --brim-port) bport=${2-}; shift 2 || usage_err "--brim-port needs a value" ;;
    --redis-port) rport=${2-}; shift 2 || usage_err "--redis-port needs a value" ;;
    --dir) dir=${2-}; shift 2 || usage_err "--dir needs a value" ;;
    --only) only=${2-}; shift 2 || usage_err "--only needs a value" ;;
    *) usage_err "unknown argument: $1" ;;
    esac
done
num_in() {   # VALUE MIN MAX: a whole number in [MIN, MAX]
    [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]
}
num_in "$keys" 1000 100000000 || usage_err "--keys: a number, at least 1000"
num_in "$rate" 100 10000000 || usage_err "--rate: a number, at least 100"
num_in "$window" 1 3600 || usage_err "--window: whole seconds, 1 to 3600"
num_in "$conns" 1 1024 || usage_err "--connections: 1 to 1024"
num_in "$bport" 35000 35095 \
    || usage_err "--brim-port: 35000 to 35095 (coordinator and four nodes)"
num_in "$rport" 35100 35196 \
    || usage_err "--redis-port: 35100 to 35196 (four servers)"
case "$only" in ""|brim|redis) ;; *) usage_err "--only: brim or redis" ;; esac

for b in brim-bench brim-coord brim-node brimctl; do
    [ -x "$bin/$b" ] || die "$bin/$b not found (build first)"
done
# Debian's python3, not a shim earlier on PATH (pyenv's runs a dozen
# shell processes per call, inside the measured windows).
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3) || die "python3 not found"
if [ "$only" != brim ]; then
    if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
        die "redis-server and redis-cli not found (apt-get install redis-server redis-tools)"
    fi
fi

# The first base B >= FROM, B + COUNT - 1 <= TO, whose COUNT ports (and,
# with BUS, their bus ports 10000 above) can be bound on 127.0.0.1 now,
# as the servers bind them (SO_REUSEADDR). These ports lie in Linux's
# ephemeral range, so a client elsewhere on the machine may hold one at
# any time: the check is repeated before each start, and a start that
# fails on its port is tried again on the next free base.
pick_base() {   # FROM TO COUNT [BUS]
    "$py" - "$@" <<'EOF'
import socket, sys
lo, hi, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
bus = len(sys.argv) > 4
def ok(p):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        s.close()
for b in range(lo, hi - n + 2):
    if all(ok(p) and (not bus or ok(p + 10000)) for p in range(b, b + n)):
        print(b)
        sys.exit(0)
sys.exit(1)
EOF
}

[ -n "$dir" ] || dir=$(mktemp -d /tmp/brim-vs.XXXXXX)
mkdir -p "$dir/brim" "$dir/redis"
dir=$(cd "$dir" && pwd)
coord=""                          # the brim coordinator, once up
ctl() { BRIM_SECRET_FILE=$dir/brim/secret "$bin/brimctl" --coordinator "$coord" "$@"; }
rcli() { timeout 60 redis-cli -h 127.0.0.1 -p "$@"; }
ncmd=0                            # operator commands of the current change
rows=$dir/rows.tsv                # one line per change, for the table
: >"$rows"
fail=0

# ---- teardown: every process by its PID ----
bench_pid=""
redis_pids=()
stop_pid() {   # PID: TERM, at most 10 s, then KILL
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for i in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}
# shellcheck disable=SC2317 # run by the trap
cleanup() {
    local p
    [ -z "$bench_pid" ] || stop_pid "$bench_pid"
    [ -z "$watch_pid" ] || kill "$watch_pid" 2>/dev/null || true
    brim_bench_damon_restore
    # brim-cluster down stops the coordinator and nodes by their PID files.
    [ ! -f "$dir/brim/cluster.conf" ] \
        || "$cluster" down --dir "$dir/brim" >/dev/null 2>&1 || true
    for p in "${redis_pids[@]}"; do
        stop_pid "$p"
    done
}
watch_pid=
trap cleanup EXIT
trap 'exit 130' INT TERM
brim_bench_damon "$0"

exec 3>&1                         # op's lines, whatever its output goes to
now() { echo "$EPOCHREALTIME"; }
us() { local t=${EPOCHREALTIME/./}; echo "$((10#$t))"; }   # microseconds
since() { local t=$1 n; n=$(us); printf '%d.%02d' $(((n - t) / 1000000)) $(((n - t) % 1000000 / 10000)); }

# Run one operator command, counted; print it and how long it took.
op() {
    local t rc=0
    ncmd=$((ncmd + 1))
    t=$(us)
    "$@" || rc=$?
    echo "  \$ $*   ($(since "$t") s, exit $rc)" >&3
    return "$rc"
}

# ---- the load: one brim-bench per change ----
# Start the load (ARGS: its target flags) into $dir/SYS-CHANGE.*; return
# once its measured part has begun (the latency log's first line).
load_start() {   # TAG TARGET-FLAGS...
    local tag=$1 t0=$SECONDS
    shift
    "$bin/brim-bench" "$@" --verify --rate "$rate" --connections "$conns" \
        --keys "$keys" --key-size 24 --value-size 1024 --duration 3600 \
        --latency-log "$dir/$tag.lat" --json --quiet \
        >"$dir/$tag.bench" 2>"$dir/$tag.bench.err" &
    bench_pid=$!
    until [ -s "$dir/$tag.lat" ]; do
        kill -0 "$bench_pid" 2>/dev/null \
            || { cat "$dir/$tag.bench" "$dir/$tag.bench.err" >&2; die "brim-bench exited before measuring"; }
        [ $((SECONDS - t0)) -lt 600 ] || die "the preload of $keys keys took over 600 s"
        sleep 0.2
    done
    echo "  load: $keys keys preloaded in $((SECONDS - t0)) s; measuring (--verify --rate $rate)"
}

# Stop the load (SIGINT: reported as usual), at most 60 s.
load_stop() {
    local t0=$SECONDS
    kill -INT "$bench_pid" 2>/dev/null || true
    while kill -0 "$bench_pid" 2>/dev/null; do
        [ $((SECONDS - t0)) -lt 60 ] || { stop_pid "$bench_pid"; break; }
        sleep 0.2
    done
    wait "$bench_pid" || true
    bench_pid=""
}

# Append the change's row: SYS CHANGE T0 T1 KEYS_MOVED NOTE.
row() {
    local sys=$1 change=$2 t0=$3 t1=$4 moved=$5 note=$6 tag=$1-$2
    "$py" - "$dir/$tag.lat" "$dir/$tag.bench" "$t0" "$t1" "$window" \
        "$moved" "$ncmd" "$sys" "$change" "$note" >>"$rows" <<'EOF'
import json, sys
lat, bench, t0, t1, w, moved, ncmd, sysname, change, note = sys.argv[1:]
t0n, t1n = int(float(t0) * 1e9), int(float(t1) * 1e9)
wn = int(w) * 1000000000
before, during = [], []
with open(lat) as f:
    for ln in f:
        if ln.startswith("#"):
            continue
        s, l = ln.split()
        s = int(s)
        if t0n - wn <= s < t0n:
            before.append(int(l))
        elif t0n <= s <= t1n:
            during.append(int(l))
def pct(v, p):      # nearest rank, milliseconds
    if not v:
        return float("nan")
    v.sort()
    k = max(1, int(round(p / 100.0 * len(v))))
    return v[k - 1] / 1e6
j = [json.loads(x) for x in open(bench) if x.startswith("{")]
j = j[-1] if j else {}
secs = float(t1) - float(t0)
mb = int(moved) * (24 + 1024) / 1e6
print("\t".join(str(x) for x in (
    sysname, change, "%.1f" % secs, "%.0f" % mb,
    "%.1f" % (mb / secs if secs > 0 else 0),
    "%.2f / %.2f" % (pct(before, 50), pct(before, 99)),
    "%.2f / %.2f" % (pct(during, 50), pct(during, 99)),
    j.get("errors", "?"), j.get("lost", "?"), j.get("stale", "?"),
    ncmd, note, len(before), len(during))))
EOF
    tail -n 1 "$rows" | awk -F'\t' '{printf "  %s %s: %s s, %s MB, %s MB/s; p50/p99 ms before %s, during %s; errors %s lost %s stale %s; %s commands %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12}'
    grep -E '^lost=' "$dir/$tag.bench" | sed 's/^/  load: /' || true
    grep -q 'lost=0 stale=0 errors=0' "$dir/$tag.bench" || fail=1
}

# The change is balanced: stop its load 2 s later and add its row.
change_end() {   # SYS CHANGE T0 T1 KEYS_MOVED NOTE
    sleep 2
    load_stop
    row "$@"
}

# ---- brim ----
bstat() {   # the field PATH (dotted) of `brimctl stats --json`
    ctl stats --json | "$py" -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[k]
print(v)' "$1"
}

# Watch (at most 900 s) until the migration of an epoch above AFTER is
# over: one process, started before the "before" window (brim_watch_start)
# and waited for after the change (brim_watch_wait), that asks the
# coordinator's /api/cluster (the CLUSTER_STATS brimctl stats reads; both
# fields from one answer) every 0.1 s on one kept-alive connection, in
# both windows alike. Not a brimctl and a python3 per look, nor one
# python3 started at the commit: new processes inside brim's short window
# took a share of the two CPUs (seen with perf sched: shells and python3
# starting during the commit's first 20 ms, when every reply of the load
# waited; and a `grep; sleep 0.2` poll alone raised a steady cluster's
# p99 from 0.25 to 2.4 ms, docs/performance.md).
brim_watch_start() {   # AFTER [PID_FILE: that process must not exit first]
    local url
    url=$(awk '$1 == "coord" {print $2}' "$dir/brim/http")
    [ -n "$url" ] || die "brim: no coordinator URL in $dir/brim/http"
    "$py" - "$url" "$1" "${2:-}" <<'EOF' &
import http.client, json, sys, time, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
after, deadline = int(sys.argv[2]), time.monotonic() + 900
pid_file = sys.argv[3]
def gone():
    # The new node exited before the change was balanced (a port taken
    # while it faulted its heap in): no use waiting 900 s.
    try:
        pid = int(open(pid_file).read())
    except (OSError, ValueError):
        return False   # not started yet
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
while time.monotonic() < deadline:
    if pid_file and gone():
        sys.exit(3)
    try:
        conn.request("GET", u.path)
        m = json.loads(conn.getresponse().read())["migration"]
        if m["epoch"] > after and not m["active"]:
            sys.exit(0)
    except (OSError, http.client.HTTPException, ValueError, KeyError):
        conn.close()   # asked again on a new connection
    time.sleep(0.1)
sys.exit(1)
EOF
    watch_pid=$!
}

brim_watch_wait() {   # [NODE: its name, for the message when it exited]
    local pid=$watch_pid rc=0
    watch_pid=
    wait "$pid" || rc=$?
    [ "$rc" -ne 3 ] || die "brim: $1 exited before the join ended: $(tail -n 1 "$dir/brim/$1.log")"
    [ "$rc" -eq 0 ] || die "brim: the migration did not end in 900 s"
}

run_brim() {
    local e t0 t1 leaver
    local try
    for try in 1 2 3; do
        bport=$(pick_base "$bport" 35099 5) || die "brim: no 5 free ports in $bport-35099"
        coord=127.0.0.1:$bport
        "$cluster" up --nodes 3 --dir "$dir/brim" --base-port "$bport" \
            --memory-mb 512 >"$dir/brim/up.log" 2>&1 && break
        grep -q 'address already in use' "$dir/brim"/*.log \
            || { cat "$dir/brim/up.log" >&2; die "brim: cluster up failed"; }
        [ "$try" -lt 3 ] || die "brim: cluster up failed 3 times on busy ports"
        echo "  brim: a port of $bport-$((bport + 3)) was taken meanwhile; again from $((bport + 5))"
        bport=$((bport + 5))
    done
    echo "== brim: 3 nodes (deploy/brim-cluster, eps 0.05, 512 MiB each; brim-node args: ${BRIM_NODE_ARGS:-none}), coordinator $coord; logs $dir/brim"

    echo "-- brim join: node4"
    load_start brim-join --coordinator "$coord"
    e=$(bstat migration.epoch)
    rm -f "$dir/brim/node4.pid"
    brim_watch_start "$e" "$dir/brim/node4.pid"
    sleep 1   # its start, before the window
    sleep "$window"
    ncmd=0
    t0=$(now)
    # The node is started and the command returns: the watcher sees the
    # join end (add-node's own wait polls with an awk every 0.1 s).
    op "$cluster" add-node node4 --dir "$dir/brim" --no-wait \
        || die "brim: add-node failed"
    brim_watch_wait node4
    t1=$(now)
    change_end brim join "$t0" "$t1" "$(bstat migration.keys_moved)" ""

    echo "-- brim leave: the original node holding the most bytes"
    load_start brim-leave --coordinator "$coord"
    leaver=$(ctl stats --json | "$py" -c '
import json, sys
d = json.load(sys.stdin)
n = [x for x in d["nodes"] if x["name"] in ("node1", "node2", "node3")]
print(max(n, key=lambda x: x["bytes"])["name"])')
    echo "  leaver: $leaver"
    e=$(bstat migration.epoch)
    brim_watch_start "$e"
    sleep 1   # its start, before the window
    sleep "$window"
    ncmd=0
    t0=$(now)
    op ctl leave "$leaver" --wait --timeout 600 2>"$dir/brim-leave.ctl.err" \
        || die "brim: brimctl leave $leaver failed: $(tail -n 2 "$dir/brim-leave.ctl.err")"
    brim_watch_wait
    t1=$(now)
    change_end brim leave "$t0" "$t1" "$(bstat migration.keys_moved)" \
        "leaver $leaver"
    "$cluster" down --dir "$dir/brim" >/dev/null 2>&1 || true
}

# ---- Redis Cluster ----
# Start a redis-server on PORT; 1 when it exits at once (its port taken).
redis_start() {   # PORT
    local port=$1 i pid
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
        --cluster-enabled yes --cluster-config-file "nodes-$port.conf" \
        --cluster-node-timeout 5000 --dir "$dir/redis" \
        --logfile "$dir/redis/$port.log" >/dev/null 2>&1 </dev/null &
    pid=$!
    redis_pids+=("$pid")
    for i in $(seq 1 100); do
        [ "$(rcli "$port" PING 2>/dev/null)" != PONG ] || return 0
        kill -0 "$pid" 2>/dev/null || { tail -n 2 "$dir/redis/$port.log"; return 1; }
        sleep 0.1
    done
    die "redis-server on $port did not answer PING in 10 s"
}

# Every port of PORTS... says cluster_state:ok and knows N nodes (at most
# 60 s): gossip must have spread before a rebalance or a reshard.
redis_wait_ok() {   # N PORT...
    local n=$1 t0=$SECONDS p ok
    shift
    while :; do
        ok=0
        for p in "$@"; do
            rcli "$p" CLUSTER INFO 2>/dev/null | tr -d '\r' \
                | grep -q "^cluster_known_nodes:$n$" \
                && rcli "$p" CLUSTER INFO | tr -d '\r' | grep -q '^cluster_state:ok$' \
                && ok=$((ok + 1))
        done
        [ "$ok" -lt $# ] || return 0
        [ $((SECONDS - t0)) -lt 60 ] || die "redis: no cluster_state:ok with $n nodes in 60 s"
        sleep 0.1
    done
}

redis_id() { rcli "$1" CLUSTER MYID | tr -d '\r'; }

# Slot owners as "slot host:port" lines, from CLUSTER NODES of PORT.
redis_owners() {   # PORT
    rcli "$1" CLUSTER NODES | "$py" -c '
import sys
for ln in sys.stdin:
    f = ln.split()
    if len(f) < 9 or "master" not in f[2]:
        continue
    addr = f[1].split("@")[0]
    for r in f[8:]:
        if r.startswith("["):
            continue            # a slot migrating or importing
        a, _, b = r.partition("-")
        for s in range(int(a), int(b or a) + 1):
            print(s, addr)'
}

# Keys in the slots whose owner differs between files BEFORE and AFTER,
# counted at their new owner.
redis_moved_keys() {   # BEFORE AFTER
    "$py" - "$1" "$2" <<'EOF'
import subprocess, sys
def load(p):
    return dict(ln.split() for ln in open(p))
b, a = load(sys.argv[1]), load(sys.argv[2])
by = {}
for s, addr in a.items():
    if b.get(s) != addr:
        by.setdefault(addr, []).append(s)
total = 0
for addr, slots in by.items():
    host, port = addr.rsplit(":", 1)
    cmds = "".join("CLUSTER COUNTKEYSINSLOT %s\n" % s for s in slots)
    out = subprocess.run(["redis-cli", "-h", host, "-p", port], input=cmds,
                         capture_output=True, text=True, timeout=120).stdout
    total += sum(int(x) for x in out.split())
print(total)
EOF
}

# `redis-cli --cluster check` (counted); when it reports an open slot,
# say so, `--cluster fix` (counted) and check again, at most 3 times.
# Counts the fixes in $fixes. A problem is a "[WARNING] ... slots in
# importing/migrating state" or "The following slots are open" line, or an
# "[ERR]" one (nodes that disagree, slots not covered).
fixes=0
redis_problem='\[WARNING\].*(importing|migrating|open)|\[ERR\]'
redis_check() {   # SEED
    local out i
    for i in 1 2 3 4; do
        op timeout 120 redis-cli --cluster check "$1" >"$dir/redis/check.out" 2>&1 || true
        out=$(cat "$dir/redis/check.out")
        cat "$dir/redis/check.out" >>"$dir/redis/check.log"
        if ! echo "$out" | grep -qE "$redis_problem"; then
            return 0
        fi
        [ "$i" -lt 4 ] || die "redis: the cluster still has open slots after 3 fixes; see $dir/redis/check.log"
        echo "  redis: --cluster check reports a problem (an open slot, or nodes that disagree):"
        echo "$out" | grep -E "$redis_problem" | sed 's/^/    /' | head -5
        echo "  redis: running --cluster fix"
        fixes=$((fixes + 1))
        op timeout 600 redis-cli --cluster fix "$1" --cluster-yes >>"$dir/redis/fix.log" 2>&1 || true
    done
}

# The change that began at T0 is balanced once `--cluster check` through
# PORT is clean (counted; fixed if need be): count the keys moved since
# the owners in file BEFORE, then end the change.
redis_balanced() {   # CHANGE T0 PORT BEFORE NOTE
    local t1 n note=$5
    redis_check "127.0.0.1:$3"
    t1=$(now)
    redis_owners "$3" >"$4.after"
    n=$(redis_moved_keys "$4" "$4.after")
    [ "$fixes" -eq 0 ] || note="${note:+$note; }needed --cluster fix ${fixes}x"
    change_end redis "$1" "$2" "$t1" "$n" "$note"
}

run_redis() {
    local p0 p1 p2 p3 t0 leaver lid seed tid n left i try
    local -a others=()
    for try in 1 2 3; do
        rport=$(pick_base "$rport" 35199 4 bus) || die "redis: no 4 free ports (and bus ports) in $rport-35199"
        p0=$rport p1=$((rport + 1)) p2=$((rport + 2)) p3=$((rport + 3))
        if redis_start "$p0" && redis_start "$p1" && redis_start "$p2" \
            && redis_start "$p3"; then
            break
        fi
        for p in "${redis_pids[@]}"; do
            stop_pid "$p"
        done
        redis_pids=()
        [ "$try" -lt 3 ] || die "redis: could not start 4 servers in 3 tries; see $dir/redis/*.log"
        echo "  redis: a port of $rport-$((rport + 3)) was taken meanwhile; again from $((rport + 4))"
        rport=$((rport + 4))
    done
    echo "== redis: 3 masters (redis-server $(redis-server --version | grep -o 'v=[0-9.]*' | cut -c3-), cluster-enabled, --save '' --appendonly no) on $p0-$p2, a fourth on $p3; logs $dir/redis"
    timeout 120 redis-cli --cluster create "127.0.0.1:$p0" "127.0.0.1:$p1" \
        "127.0.0.1:$p2" --cluster-replicas 0 --cluster-yes \
        >"$dir/redis/create.log" 2>&1 || die "redis: cluster create failed; see $dir/redis/create.log"
    redis_wait_ok 3 "$p0" "$p1" "$p2"

    echo "-- redis join: 127.0.0.1:$p3"
    load_start redis-join --target redis-cluster --server "127.0.0.1:$p0"
    sleep "$window"
    redis_owners "$p0" >"$dir/redis/owners.join"
    ncmd=0
    fixes=0
    t0=$(now)
    op timeout 120 redis-cli --cluster add-node "127.0.0.1:$p3" "127.0.0.1:$p0" \
        >"$dir/redis/add-node.log" 2>&1 || die "redis: add-node failed; see $dir/redis/add-node.log"
    # The new master must know every node before it can import slots.
    i=$(us)
    redis_wait_ok 4 "$p0" "$p1" "$p2" "$p3"
    i=$(since "$i")
    echo "  (waited $i s for every node to know the fourth: CLUSTER INFO, not counted)"
    op timeout 600 redis-cli --cluster rebalance "127.0.0.1:$p0" \
        --cluster-use-empty-masters >"$dir/redis/rebalance.log" 2>&1 \
        || echo "  redis: rebalance exited $? (see $dir/redis/rebalance.log)"
    redis_balanced join "$t0" "$p0" "$dir/redis/owners.join" \
        "of which $i s waiting for gossip after add-node"

    echo "-- redis leave: the original master holding the most keys"
    load_start redis-leave --target redis-cluster --server "127.0.0.1:$p0"
    sleep "$window"
    leaver=$(for p in "$p0" "$p1" "$p2"; do
                 echo "$(rcli "$p" DBSIZE | tr -d '\r') $p"
             done | sort -n | tail -n 1 | awk '{print $2}')
    lid=$(redis_id "$leaver")
    for p in "$p0" "$p1" "$p2" "$p3"; do
        [ "$p" = "$leaver" ] || others+=("$p")
    done
    seed=127.0.0.1:${others[0]}
    echo "  leaver: 127.0.0.1:$leaver ($lid)"
    redis_owners "${others[0]}" >"$dir/redis/owners.leave"
    left=$(awk -v a="127.0.0.1:$leaver" '$2 == a' "$dir/redis/owners.leave" | wc -l)
    ncmd=0
    fixes=0
    t0=$(now)
    # A third of its slots to each of the other three (the last takes
    # what is left); reshard takes one source and one destination.
    for i in 0 1 2; do
        tid=$(redis_id "${others[$i]}")
        if [ "$i" -lt 2 ]; then n=$((left / 3)); else n=$((left - 2 * (left / 3))); fi
        op timeout 600 redis-cli --cluster reshard "$seed" --cluster-from "$lid" \
            --cluster-to "$tid" --cluster-slots "$n" --cluster-yes \
            >>"$dir/redis/reshard.log" 2>&1 \
            || echo "  redis: reshard to ${others[$i]} exited $? (see $dir/redis/reshard.log)"
    done
    # del-node refuses a node that still holds a slot (one left open):
    # then check (and fix) and try once more.
    if ! op timeout 120 redis-cli --cluster del-node "$seed" "$lid" \
        >"$dir/redis/del-node.log" 2>&1; then
        echo "  redis: del-node refused (see $dir/redis/del-node.log): check, then again"
        redis_check "$seed"
        op timeout 120 redis-cli --cluster del-node "$seed" "$lid" \
            >>"$dir/redis/del-node.log" 2>&1 \
            || die "redis: del-node failed twice; see $dir/redis/del-node.log"
    fi
    redis_balanced leave "$t0" "${others[0]}" "$dir/redis/owners.leave" \
        "leaver :$leaver"
    for p in "${redis_pids[@]}"; do
        stop_pid "$p"
    done
    redis_pids=()
}

echo "vs-redis-cluster: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) CPUs; $keys keys of 1 KiB, --rate $rate --verify, window $window s; the systems run one after the other"
[ "$only" = redis ] || run_brim
[ "$only" = brim ] || run_redis

echo
echo "| system | change | s to balanced | MB moved | MB/s | p50 / p99 ms before | p50 / p99 ms during | errors | lost | stale | operator commands | note |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12}' "$rows"
echo
echo "replies in the windows (before, during): $(awk -F'\t' '{printf "%s %s: %s, %s; ", $1, $2, $13, $14}' "$rows")"
echo "logs: $dir"
exit "$fail"
