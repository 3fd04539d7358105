#!/usr/bin/env bash
# deploy/demo.sh - brim doing its whole job on real data (issue 5): Debian's
# package index (apt-cache dumpavail, one cache entry per package) in a
# local cluster; a fourth node joins and the fullest original node leaves
# while a verified load runs; every record is checked byte for byte before
# and after.
#
#   ./deploy/demo.sh [--records N] [--dir DIR] [--base-port PORT] [--keep]
#                    [--load-s S] [--bin DIR] [--help]
#
# Steps (each prints a header; a failure names its step and the logs):
#   1 install missing packages (deploy/packages.txt), build, get the data
#   2 start brim-coord and three brim-nodes (deploy/brim-cluster)
#   3 import every record (brimctl import)     4 verify them (brimctl verify;
#     pymemcache reads some through a memcached port, as brimctl does)
#   5 stats   6 load + a fourth node joins     7 the fullest node leaves
#   8 stop the load, report it, verify again   9 stop everything (or --keep)
# Exit status: 0 every step passed, 1 a step failed, 64 bad usage.
set -uo pipefail

PROG=demo.sh
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=deploy/lib.sh
. "$ROOT/deploy/lib.sh"
CLUSTER=$ROOT/deploy/brim-cluster

# The load of steps 6-7: brim-bench's own keys (prefix bench:) with
# --verify, and a reader of the imported records. Sized to leave the two
# cores room for the migrations.
BENCH_ARGS=(--connections 8 --keys 20000 --value-size 100-1000 --rate 20000)
READER_RATE=2000
MIGRATION_S=90          # bound on one migration, seconds

usage() {
    cat <<'EOF'
usage: deploy/demo.sh [options]

brim on real data: Debian's package index (apt-cache dumpavail, about
63,000 records of 400 bytes to 76 KiB) stored as pkg:NAME -> record in a
local cluster of three nodes; a fourth node joins and the original node
with the most partitions leaves while brim-bench --verify and a reader of
the records run; every record is verified byte for byte before and after.

options:
  --records N      use only the first N records of the index (default all)
  --dir DIR        working directory: logs, PID files, the data file
                   (default a fresh mktemp -d; kept afterwards)
  --base-port P    coordinator port; nodes take the ports after it, their
                   memcached ports those 1000 above, their HTTP ports any
                   the kernel picks (default 7400 if 7400..7407 and
                   8400..8407 are free, else a free range)
  --keep           leave the cluster running at the end and print how to
                   talk to it and how to stop it
  --load-s S       how long the load of steps 6-7 runs, seconds (default
                   15; step 8 waits for its end)
  --bin DIR        use the binaries in DIR: no package check, no build
                   (the tests use this)
  -h, --help       this text

Step 1 installs the packages of deploy/packages.txt that are missing (as
root; otherwise it prints the apt-get command and stops) and builds
brim-coord, brim-node, brimctl and brim-bench in build/ ($BRIM_BUILD_DIR).
If apt-cache dumpavail prints nothing, it runs apt-get update (as root) or
says how to. Every process is stopped at the end, on failure too, unless
--keep; the directory with the logs is left for inspection.
Exit status: 0 every step passed, 1 a step failed (the message names the
step and the directory of the logs), 64 bad usage.
EOF
}

usage_err() {
    echo "$PROG: $*" >&2
    echo "try: $PROG --help" >&2
    exit 64
}

RECORDS=""; DIR=""; BASE_PORT=""; KEEP=0; LOAD_S=15; BIN=""
while [ $# -gt 0 ]; do
    case "$1" in
    -h|--help) usage; exit 0 ;;
    --records) RECORDS=${2-}; shift 2 || usage_err "--records needs a value" ;;
    --dir) DIR=${2-}; shift 2 || usage_err "--dir needs a value" ;;
    --base-port) BASE_PORT=${2-}; shift 2 || usage_err "--base-port needs a value" ;;
    --keep) KEEP=1; shift ;;
    --load-s) LOAD_S=${2-}; shift 2 || usage_err "--load-s needs a value" ;;
    --bin) BIN=${2-}; shift 2 || usage_err "--bin needs a value" ;;
    *) usage_err "unknown argument: $1" ;;
    esac
done
if [ -n "$RECORDS" ]; then
    [[ "$RECORDS" =~ ^[1-9][0-9]{0,8}$ ]] \
        || usage_err "--records: \"$RECORDS\" is not a whole number from 1"
fi
if [ -n "$BASE_PORT" ]; then
    [[ "$BASE_PORT" =~ ^[1-9][0-9]{0,4}$ ]] && [ "$BASE_PORT" -le 64528 ] \
        || usage_err "--base-port: \"$BASE_PORT\" is not a port 1 .. 64528 (the memcached ports are 1000 above)"
fi
[[ "$LOAD_S" =~ ^[1-9][0-9]{0,4}$ ]] \
    || usage_err "--load-s: \"$LOAD_S\" is not a whole number of seconds from 1"
if [ -n "$BIN" ]; then
    [ -d "$BIN" ] || usage_err "--bin: no directory $BIN"
    BIN=$(cd "$BIN" && pwd)
fi

# ---- steps, failure, cleanup ------------------------------------------

STEP=0; STEP_NAME="starting"; STEP_T0=$SECONDS; T0=$SECONDS
CLUSTER_STARTED=0; BENCH_PID=""; READER_PID=""; DATA=""

step() {
    STEP=$1
    STEP_NAME=$2
    STEP_T0=$SECONDS
    printf '\n=== step %s/9: %s\n' "$STEP" "$STEP_NAME"
}

step_done() {
    printf '    (step %s took %ds)\n' "$STEP" "$((SECONDS - STEP_T0))"
}

fail() {
    printf '\n%s: FAILED at step %s (%s): %s\n' "$PROG" "$STEP" \
        "$STEP_NAME" "$*" >&2
    if [ -n "$DIR" ]; then
        printf '%s: logs are in %s\n' "$PROG" "$DIR" >&2
    fi
    exit 1
}

# Show a command as it is run, binaries by their short names; an
# argument that starts with ">" is shell syntax (a redirect, "&"), shown
# unquoted so the line can be pasted.
show() {
    local a out=""
    for a in "$@"; do
        a=${a#"$BIN"/}
        case "$a" in
        ">"*) out+=" $a" ;;
        *[[:space:]]*) out+=" '$a'" ;;
        *) out+=" $a" ;;
        esac
    done
    printf '$%s\n' "$out"
}

# Stop background PID (TERM, at most 10 s, then KILL); its status or 143.
stop_job() {
    local pid=$1 _
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [ -z "$BENCH_PID" ] || stop_job "$BENCH_PID" || true
    [ -z "$READER_PID" ] || stop_job "$READER_PID" || true
    if [ "$CLUSTER_STARTED" = 1 ] && { [ "$KEEP" = 0 ] || [ "$rc" != 0 ]; }
    then
        "$CLUSTER" down --dir "$DIR" >>"$DIR/down.log" 2>&1 \
            || echo "$PROG: brim-cluster down failed; see $DIR/down.log" >&2
        [ "$rc" = 0 ] || echo "$PROG: stopped the cluster" >&2
    fi
    if [ "$rc" = 0 ] && [ "$KEEP" = 0 ] && [ -n "$DATA" ]; then
        rm -f "$DATA"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'fail "interrupted"' INT TERM

# ---- the JSON side: stats, migration progress, moves (python3) --------

# Commands (environment CTL, COORD):
#   settle KEYS S          wait (at most S seconds) until the heartbeats
#                          show KEYS keys in all and no migration
#   snapshot FILE          save the coordinator's stats and every node's
#                          migration counters
#   fullest NAME...        the one of NAMEs with the most partitions
#   watch FILE KIND NAME S show migration progress since snapshot FILE
#                          until done (or S seconds: exit 1), then what
#                          moved against the ideal (KIND join or leave)
read -r -d '' DEMO_PY <<'EOF'
import json, os, subprocess, sys, time

CTL, COORD = os.environ["CTL"], os.environ["COORD"]

def ctl(*args):
    out = subprocess.run([CTL, "--timeout-ms", "3000"] + list(args),
                         capture_output=True, text=True, timeout=10)
    if out.returncode != 0:
        raise RuntimeError("brimctl %s: %s" % (" ".join(args),
                                               out.stderr.strip()))
    return json.loads(out.stdout)

def cluster():
    return ctl("--coordinator", COORD, "stats", "--json")

def node_mig(addr):
    try:
        return ctl("--server", addr, "stats", "migration", "--json")[
            "nodes"][0]["stats"]
    except Exception:
        return None             # gone (it left) or busy: counted as absent

def snapshot():
    c = cluster()
    return {"cluster": c,
            "mig": {n["name"]: node_mig(n["addr"]) for n in c["nodes"]}}

def num(x):
    return "{:,}".format(int(round(x)))

def watch(before, kind, name, limit_s):
    t0 = time.monotonic()
    b, bmig = before["cluster"], before["mig"]
    last, last_t = None, 0.0
    while True:
        s = snapshot()
        c, m = s["cluster"], s["cluster"]["migration"]
        moved = m["moved_arc"] + m["moved_cap"]
        done_in = keys_in = bytes_in = in_flight = out_pending = 0
        for n, v in s["mig"].items():
            if v is None:
                continue
            old = bmig.get(n) or {}
            done_in += v["mig_partitions_in_done"] - old.get(
                "mig_partitions_in_done", 0)
            keys_in += v["mig_keys_in"] - old.get("mig_keys_in", 0)
            bytes_in += v["mig_bytes_in"] - old.get("mig_bytes_in", 0)
            in_flight += v["mig_partitions_in_flight"]
            out_pending += v["mig_partitions_out_pending"]
        members = [n["name"] for n in c["nodes"]]
        changed = c["epoch"] > b["epoch"] and (
            (kind == "join") == (name in members))
        coord_done = not m["active"] and \
            m["partitions_done"] >= m["partitions_total"]
        done = changed and coord_done and in_flight == 0 \
            and out_pending == 0 and done_in >= moved
        el = time.monotonic() - t0
        if "ideal_keys" in m:
            keys_in = m["keys_moved"]       # the coordinator counts them
        text = ("epoch %d: %s/%s partitions streamed, %s keys; in flight "
                "%d, old owners holding %d%s" % (
                    c["epoch"], num(min(done_in, moved)), num(moved),
                    num(keys_in), in_flight, out_pending,
                    "; coordinator: %d/%d done" % (m["partitions_done"],
                                                   m["partitions_total"])
                    if m["active"] else ""))
        if done or (text != last and el - last_t >= 0.5):
            print("  %5.1fs  %s" % (el, text), flush=True)
            last, last_t = text, el
        if done:
            break
        if el > limit_s:
            print("migration not done after %ds" % limit_s, file=sys.stderr)
            sys.exit(1)
        time.sleep(0.25)
    # What moved, against the ideal: partitions from the map, keys from
    # the coordinator when it counts them (migration.keys_moved, ideal_keys
    # and churn), else from the nodes' counters.
    P, N = c["partitions"], len(c["nodes"])
    if kind == "join":
        ideal_p, why_p = P / N, "P/N = %s/%d" % (num(P), N)
        ideal_k = b["keys"] / N
        why_k = "%s keys/N" % num(b["keys"])
    else:
        leaver = [n for n in b["nodes"] if n["name"] == name][0]
        ideal_p, why_p = leaver["partitions"], "what %s held" % name
        ideal_k, why_k = leaver["keys"], "what %s held" % name
    if "ideal_keys" in m:
        keys_in, ideal_k = m["keys_moved"], m["ideal_keys"]
    print("moved %s partitions (arc %s, cap %s) = %.3f x the ideal %s (%s)"
          % (num(moved), num(m["moved_arc"]), num(m["moved_cap"]),
             moved / ideal_p if ideal_p else 0, num(ideal_p), why_p))
    print("moved %s keys (%.1f MB) = %.3f x the ideal %s (%s)"
          % (num(keys_in), bytes_in / 1e6,
             keys_in / ideal_k if ideal_k else 0, num(ideal_k), why_k))

def settle(keys, limit_s):
    """Wait until the heartbeats show KEYS keys and no migration."""
    t0 = time.monotonic()
    while True:
        c = cluster()
        if c["keys"] >= keys and not c["migration"]["active"]:
            return
        if time.monotonic() - t0 > limit_s:
            print("the stats still show %d keys (of %d) or a migration "
                  "after %ds" % (c["keys"], keys, limit_s), file=sys.stderr)
            return
        time.sleep(0.2)

cmd = sys.argv[1]
try:
    if cmd == "settle":
        settle(int(sys.argv[2]), float(sys.argv[3]))
    elif cmd == "snapshot":
        with open(sys.argv[2], "w") as f:
            json.dump(snapshot(), f)
    elif cmd == "fullest":
        nodes = [n for n in cluster()["nodes"] if n["name"] in sys.argv[2:]]
        best = max(nodes, key=lambda n: (n["partitions"], n["name"]))
        print(best["name"], best["partitions"], best["keys"])
    elif cmd == "watch":
        with open(sys.argv[2]) as f:
            before = json.load(f)
        watch(before, sys.argv[3], sys.argv[4], float(sys.argv[5]))
except (RuntimeError, KeyError, ValueError, subprocess.TimeoutExpired) as e:
    print("%s: %s" % (cmd, e), file=sys.stderr)
    sys.exit(1)
EOF

demo_py() {
    CTL=$CTL COORD=$COORD python3 -c "$DEMO_PY" "$@"
}

# A running brimctl/brim-bench must have the commands the demo uses.
need_feature() {   # BINARY PATTERN WHAT
    "$1" "${@:4}" --help 2>&1 | grep -q -- "$2" \
        || fail "$(basename "$1") has no $3 (build it from this tree)"
}

# ---- 1. packages, build, data ------------------------------------------

step 1 "packages, build, data"
if [ -z "$BIN" ]; then
    echo "checking Debian packages (deploy/packages.txt)"
    brim_install_packages "$ROOT" || fail "packages missing (see above)"
    build_dir=${BRIM_BUILD_DIR:-build}
    case "$build_dir" in /*) ;; *) build_dir=$ROOT/$build_dir ;; esac
    if [ -f "$build_dir/CMakeCache.txt" ]; then
        echo "building $build_dir (incremental)"
    else
        echo "building $build_dir (the first build: a minute or two on 2 cores)"
    fi
    brim_build "$ROOT" "$build_dir" brim-coord brim-node brimctl brim-bench \
        >"${TMPDIR:-/tmp}/brim-demo-build.$$.log" 2>&1 \
        || { tail -n 30 "${TMPDIR:-/tmp}/brim-demo-build.$$.log" >&2
             fail "the build failed (above: the end of its log," \
                  "${TMPDIR:-/tmp}/brim-demo-build.$$.log)"; }
    rm -f "${TMPDIR:-/tmp}/brim-demo-build.$$.log"
    BIN=$build_dir/bin
fi
for b in brim-coord brim-node brimctl brim-bench; do
    [ -x "$BIN/$b" ] || fail "$BIN/$b not found"
done
CTL=$BIN/brimctl
need_feature "$CTL" "--format" "import command" import
need_feature "$CTL" "--loop" "verify --loop" verify
need_feature "$BIN/brim-bench" "--key-prefix" "--key-prefix option"
export BRIM_BIN=$BIN
echo "binaries: $BIN"

if [ -z "$DIR" ]; then
    DIR=$(mktemp -d "${TMPDIR:-/tmp}/brim-demo.XXXXXX") \
        || fail "mktemp -d failed"
else
    mkdir -p "$DIR" || fail "cannot create $DIR"
    DIR=$(cd "$DIR" && pwd)
fi
echo "directory: $DIR (logs, PID files, the data)"

if [ -z "$(apt-cache dumpavail 2>/dev/null | head -c 1)" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        fail "apt-cache dumpavail prints nothing: the package lists are" \
             "empty. Run 'sudo apt-get update' once, then this again."
    fi
    echo "the package lists are empty: apt-get update"
    apt-get update >"$DIR/apt-get-update.log" 2>&1 \
        || fail "apt-get update failed; see $DIR/apt-get-update.log"
fi
DATA=$DIR/packages.deb822
if [ -n "$RECORDS" ]; then
    printf '$ apt-cache dumpavail | (the first %s records) > %s\n' \
        "$RECORDS" "$DATA"
    # awk reads to the end: apt-cache must not die of SIGPIPE.
    apt-cache dumpavail | awk -v n="$RECORDS" \
        'BEGIN { RS = ""; ORS = "\n\n" } NR <= n { print }' >"$DATA" \
        || fail "apt-cache dumpavail failed"
else
    printf '$ apt-cache dumpavail > %s\n' "$DATA"
    apt-cache dumpavail >"$DATA" || fail "apt-cache dumpavail failed"
fi
nrec=$(grep -c '^Package:' "$DATA")
data_bytes=$(wc -c <"$DATA")
[ "$nrec" -gt 0 ] || fail "no records in $DATA"
printf 'data: %s records, %s bytes (Debian control records, keyed by Package)\n' \
    "$nrec" "$data_bytes"
step_done

# ---- 2. cluster ----------------------------------------------------------

step 2 "start brim-coord and three brim-nodes on loopback"
# Each node's memcached port is its brim port plus 1000 (brim-cluster's
# default), so the range 1000 above must be free as well.
mc_range_free() {   # BASE
    [ "$(brim_free_ports 8 $(($1 + 1000)))" = "$(($1 + 1000))" ]
}
if [ -n "$BASE_PORT" ]; then
    # Asked for: those ports or nothing (the search would move elsewhere).
    got=$(brim_free_ports 8 "$BASE_PORT") || got=""
    [ "$got" = "$BASE_PORT" ] \
        || fail "ports $BASE_PORT..$((BASE_PORT + 7)) are not all free"
    mc_range_free "$BASE_PORT" \
        || fail "ports $((BASE_PORT + 1000))..$((BASE_PORT + 1007)) (the nodes' memcached ports) are not all free"
else
    BASE_PORT=$(brim_free_ports 8 7400) || fail "no free range of 8 ports"
    tries=0
    while ! mc_range_free "$BASE_PORT"; do
        tries=$((tries + 1))
        [ $tries -lt 20 ] || fail "no free ranges of 8 ports 1000 apart"
        BASE_PORT=$(brim_free_ports 8) || fail "no free range of 8 ports"
    done
fi
COORD=127.0.0.1:$BASE_PORT
show "$CLUSTER" up --nodes 3 --dir "$DIR" --base-port "$BASE_PORT"
CLUSTER_STARTED=1
"$CLUSTER" up --nodes 3 --dir "$DIR" --base-port "$BASE_PORT" \
    >"$DIR/up.out" 2>&1 || { cat "$DIR/up.out"; fail "brim-cluster up failed"; }
sed '/^talk to it:/,$d' "$DIR/up.out"
# brim-cluster wrote the cluster secret; brimctl proves it to leave.
show export BRIM_SECRET_FILE="$DIR/secret"
export BRIM_SECRET_FILE="$DIR/secret"
step_done

# ---- 3. import -----------------------------------------------------------

FMT=(--format deb822 --key-field Package --prefix pkg:)
step 3 "import every record: key pkg:PACKAGE, value the whole record"
show "$CTL" --coordinator "$COORD" import "$DATA" "${FMT[@]}" --progress
"$CTL" --coordinator "$COORD" import "$DATA" "${FMT[@]}" --progress \
    | tee "$DIR/import.out"
[ "${PIPESTATUS[0]}" = 0 ] || fail "brimctl import failed"
grep -q '^imported [0-9]* records' "$DIR/import.out" \
    || fail "brimctl import printed no 'imported N records' line"
step_done

# ---- 4. verify -----------------------------------------------------------

# Run brimctl verify; succeed on a "verified N/N" line with N > 0.
verify_all() {
    local out=$1 line
    show "$CTL" --coordinator "$COORD" verify "$DATA" "${FMT[@]}"
    "$CTL" --coordinator "$COORD" verify "$DATA" "${FMT[@]}" | tee "$out"
    [ "${PIPESTATUS[0]}" = 0 ] || fail "brimctl verify found differences"
    line=$(grep -o 'verified [0-9]*/[0-9]*' "$out" | tail -n 1)
    [[ "$line" =~ ^verified\ ([0-9]+)/([0-9]+)$ ]] \
        && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] \
        && [ "${BASH_REMATCH[1]}" -gt 0 ] \
        || fail "expected 'verified N/N', got '${line:-nothing}'"
    VERIFIED_N=${BASH_REMATCH[1]}
}

step 4 "read every key back and compare it byte for byte with the source"
verify_all "$DIR/verify1.out"
# An existing client, unchanged: pymemcache (python3-pymemcache) reads
# records through one node's memcached port (docs/memcached.md), which
# fetches each from its owner; they must be what brimctl reads.
MCADDR=$(awk 'NR == 1 { print $2 }' "$DIR/memcached")
echo "pymemcache through node1's memcached port $MCADDR:"
/usr/bin/python3 - "$MCADDR" "$DATA" "$CTL" "$COORD" <<'PY' \
    || fail "pymemcache through the memcached port disagreed with brimctl"
import subprocess, sys
from pymemcache.client.base import Client
host, port = sys.argv[1].rsplit(":", 1)
names = [ln.split(":", 1)[1].strip() for ln in open(sys.argv[2])
         if ln.startswith("Package:")][:200:40]
c = Client((host, int(port)), connect_timeout=5, timeout=10)
got = c.get_many(["pkg:" + n for n in names])
for n in names:
    want = subprocess.run([sys.argv[3], "--coordinator", sys.argv[4], "get",
                           "pkg:" + n], capture_output=True).stdout
    v = got.get("pkg:" + n)
    print("    get pkg:%-28s %6s bytes  %s" % (n, len(v or b""),
          "same as brimctl get" if v == want else "DIFFERENT"))
    if v != want:
        sys.exit(1)
PY
step_done

# ---- 5. stats ------------------------------------------------------------

print_stats() {
    show "$CTL" --coordinator "$COORD" stats
    "$CTL" --coordinator "$COORD" stats || fail "brimctl stats failed"
}

step 5 "cluster stats"
# The coordinator learns the nodes' keys from their heartbeats (500 ms).
demo_py settle "$VERIFIED_N" 10 || fail "cannot read the stats"
print_stats
step_done

# ---- 6. load, then a fourth node joins ----------------------------------

step 6 "load in the background; a fourth node joins live"
show "$BIN/brim-bench" --coordinator "$COORD" --verify --key-prefix bench: \
    "${BENCH_ARGS[@]}" --duration "$LOAD_S" --quiet "> $DIR/bench.out &"
"$BIN/brim-bench" --coordinator "$COORD" --verify --key-prefix bench: \
    "${BENCH_ARGS[@]}" --duration "$LOAD_S" --quiet \
    >"$DIR/bench.out" 2>"$DIR/bench.err" </dev/null &
BENCH_PID=$!
BENCH_T0=$SECONDS
show "$CTL" --coordinator "$COORD" verify "$DATA" "${FMT[@]}" --loop \
    --duration $((LOAD_S + 300)) --rate "$READER_RATE" "> $DIR/reader.out &"
"$CTL" --coordinator "$COORD" verify "$DATA" "${FMT[@]}" --loop \
    --duration $((LOAD_S + 300)) --rate "$READER_RATE" \
    >"$DIR/reader.out" 2>"$DIR/reader.err" </dev/null &
READER_PID=$!
sleep 2     # the bench loads its keys first
kill -0 "$BENCH_PID" 2>/dev/null \
    || fail "brim-bench exited at once: $(tail -n 3 "$DIR/bench.err" "$DIR/bench.out")"
kill -0 "$READER_PID" 2>/dev/null \
    || fail "the reader exited at once: $(tail -n 3 "$DIR/reader.err")"
demo_py snapshot "$DIR/before-join.json" || fail "cannot read the stats"
show "$CLUSTER" add-node node4 --dir "$DIR"
"$CLUSTER" add-node node4 --dir "$DIR" || fail "brim-cluster add-node failed"
echo "migration progress:"
demo_py watch "$DIR/before-join.json" join node4 "$MIGRATION_S" \
    || fail "the migration to node4 did not complete"
print_stats
step_done

# ---- 7. the fullest original node leaves --------------------------------

step 7 "the original node with the most partitions leaves live"
read -r LEAVER lparts lkeys < <(demo_py fullest node1 node2 node3) \
    || fail "cannot read the stats"
[ -n "${LEAVER:-}" ] || fail "cannot find the fullest node"
echo "fullest original node: $LEAVER ($lparts partitions, $lkeys keys)"
demo_py snapshot "$DIR/before-leave.json" || fail "cannot read the stats"
leave_pid=$(cat "$DIR/$LEAVER.pid" 2>/dev/null)
if "$CTL" leave --help 2>&1 | grep -q -- '--wait'; then
    show "$CTL" --coordinator "$COORD" leave "$LEAVER" --wait
    "$CTL" --coordinator "$COORD" leave "$LEAVER" --wait \
        || fail "brimctl leave $LEAVER --wait failed"
else
    show "$CTL" --coordinator "$COORD" leave "$LEAVER"
    "$CTL" --coordinator "$COORD" leave "$LEAVER" \
        || fail "brimctl leave $LEAVER failed"
fi
echo "migration progress:"
demo_py watch "$DIR/before-leave.json" leave "$LEAVER" "$MIGRATION_S" \
    || fail "the migration away from $LEAVER did not complete"
# The leaver exits once its streams are done.
for _ in $(seq 1 200); do
    [ -n "$leave_pid" ] && kill -0 "$leave_pid" 2>/dev/null || break
    sleep 0.1
done
if [ -n "$leave_pid" ] && kill -0 "$leave_pid" 2>/dev/null; then
    fail "$LEAVER (pid $leave_pid) still runs 20 s after leaving; see $DIR/$LEAVER.log"
fi
echo "$LEAVER exited"
print_stats
step_done

# ---- 8. stop the load, verify again --------------------------------------

step 8 "stop the load, report it, verify every record again"
if [ $((SECONDS - BENCH_T0)) -lt "$LOAD_S" ]; then
    echo "waiting for the load's last $((LOAD_S - (SECONDS - BENCH_T0))) s"
else
    echo "note: the load's $LOAD_S s ended before step 7 did; raise --load-s" \
         "to cover both changes"
fi
for _ in $(seq 1 $(( (LOAD_S + 60) * 10 ))); do
    kill -0 "$BENCH_PID" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$BENCH_PID" 2>/dev/null; then
    stop_job "$BENCH_PID"
    bench_rc=$?
else
    wait "$BENCH_PID"
    bench_rc=$?
fi
BENCH_PID=""
stop_job "$READER_PID"
reader_rc=$?
READER_PID=""
echo "brim-bench (bench: keys, --verify):"
grep -E '^(run|latency us|cluster|verify):|^lost=|^FAILED' "$DIR/bench.out" \
    | sed 's/^/  /'
echo "reader (pkg: keys, against the source):"
sed 's/^/  /' "$DIR/reader.out"
load_ok=1
grep -q '^lost=0 stale=0 errors=0$' "$DIR/bench.out" && [ "$bench_rc" = 0 ] \
    || { load_ok=0; echo "  brim-bench: exit $bench_rc (see $DIR/bench.out, bench.err)"; }
grep -q 'missing=0 different=0 errors=0' "$DIR/reader.out" && [ "$reader_rc" = 0 ] \
    || { load_ok=0; echo "  reader: exit $reader_rc (see $DIR/reader.out, reader.err)"; }
verify_all "$DIR/verify2.out"
print_stats
[ "$load_ok" = 1 ] || fail "the load saw lost, stale, different or failed reads (above)"
step_done

# ---- 9. stop -------------------------------------------------------------

step 9 "stop"
if [ "$KEEP" = 1 ]; then
    first=$(sed -n 's/^Package:[[:space:]]*//p' "$DATA" | head -n 1)
    echo "the cluster keeps running (--keep); talk to it:"
    echo "  export BRIM_SECRET_FILE=$DIR/secret   (for leave and plan)"
    echo "  $CTL --coordinator $COORD get pkg:$first"
    echo "  $CTL --coordinator $COORD stats"
    echo "  $CTL --coordinator $COORD nodes"
    echo "  $CLUSTER status --dir $DIR"
    echo "  $CTL --coordinator $COORD verify $DATA"
    echo "stop it:"
    echo "  $CLUSTER down --dir $DIR"
else
    show "$CLUSTER" down --dir "$DIR"
    "$CLUSTER" down --dir "$DIR" || fail "brim-cluster down failed"
    CLUSTER_STARTED=0
    rm -f "$DATA"
    DATA=""
    echo "logs: $DIR (the data copy removed)"
fi
step_done
printf '\ndemo passed in %ds\n' "$((SECONDS - T0))"
