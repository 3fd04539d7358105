#!/usr/bin/env bash
# tests/cluster/demo_slice.sh - deploy/demo.sh's nine steps on a slice of
# the real data (the first RECORDS records of apt-cache dumpavail), with the
# binaries of the tree under test (--bin, so nothing is installed or
# built), on a free range of loopback ports, bounded in time:
#   - exit status 0;
#   - "verified D/D" exactly twice, D the distinct Package names of the
#     slice (counted here, independently of brimctl);
#   - the load's "lost=0 stale=0 errors=0" line, and the reader's
#     "missing=0 different=0 errors=0";
#   - afterwards no process of any PID file in the demo's directory runs.
# Exits 77 (skipped) when apt-cache dumpavail prints nothing (the package
# lists are empty: run apt-get update).
#
#   demo_slice.sh DEMO BINDIR [RECORDS]
set -u
DEMO=$1
BIN=$2
RECORDS=${3:-2000}
LIMIT_S=${BRIM_DEMO_SLICE_LIMIT_S:-240}

D=$(mktemp -d "${TMPDIR:-/tmp}/brim-demo-slice.XXXXXX")
PIDS_SEEN=""

alive() {   # PID runs (a zombie not yet reaped counts as gone)
    kill -0 "$1" 2>/dev/null || return 1
    [ "$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]
}

# Every PID a PID file in the demo's directory names now, remembered so
# that a process whose file was removed is still checked.
note_pids() {
    local f p
    for f in "$D"/demo/*.pid; do
        [ -e "$f" ] || continue
        p=$(cat "$f" 2>/dev/null)
        [[ "$p" =~ ^[0-9]+$ ]] && PIDS_SEEN="$PIDS_SEEN $p"
    done
}

# Stop, by PID, whatever is left (only after a failure).
reap() {
    local p
    note_pids
    for p in $PIDS_SEEN; do
        if alive "$p" && tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null \
            | grep -q brim
        then
            kill -KILL "$p" 2>/dev/null
        fi
    done
}

fail() {
    echo "FAIL: $*"
    [ -f "$D/out" ] && { echo "--- demo output (last 60 lines)"; tail -n 60 "$D/out"; }
    for f in "$D"/demo/*.log "$D"/demo/*.err; do
        [ -f "$f" ] || continue
        echo "--- $f (last 10 lines)"
        tail -n 10 "$f"
    done
    reap
    rm -rf "$D"
    exit 1
}

if [ -z "$(apt-cache dumpavail 2>/dev/null | head -c 1)" ]; then
    echo "SKIP: apt-cache dumpavail prints nothing (run apt-get update)"
    rm -rf "$D"
    exit 77
fi

# The distinct Package names of the slice, as demo.sh cuts it.
DISTINCT=$(apt-cache dumpavail | awk -v n="$RECORDS" \
    'BEGIN { RS = ""; FS = "\n" }
     NR <= n { for (i = 1; i <= NF; i++)
                   if ($i ~ /^Package:/) { sub(/^Package:[ \t]*/, "", $i);
                                           print $i; break } }' \
    | sort -u | wc -l)
[ "$DISTINCT" -gt 0 ] || fail "no Package names in the first $RECORDS records"

BASE=$(python3 "$(dirname "${BASH_SOURCE[0]}")/../support/ports.py" --cluster 8)
[ -n "$BASE" ] || fail "no free range of 8 ports"

# Remember the PIDs while the demo runs (it removes the files at its end).
( while sleep 0.5; do
      for f in "$D"/demo/*.pid; do
          [ -e "$f" ] && cat "$f" 2>/dev/null && echo
      done
  done >>"$D/pids" ) &
watcher=$!

start=$SECONDS
timeout --kill-after=30 "$LIMIT_S" "$DEMO" --bin "$BIN" --records "$RECORDS" \
    --dir "$D/demo" --base-port "$BASE" --load-s 12 >"$D/out" 2>&1
rc=$?
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
PIDS_SEEN=$(grep -E '^[0-9]+$' "$D/pids" 2>/dev/null | sort -u | tr '\n' ' ')
note_pids
echo "demo.sh --records $RECORDS: exit $rc in $((SECONDS - start)) s," \
     "$DISTINCT distinct keys expected"

[ "$rc" -ne 124 ] || fail "demo.sh did not finish within ${LIMIT_S}s"
[ "$rc" -eq 0 ] || fail "demo.sh exited $rc"
n=$(grep -c "^verified $DISTINCT/$DISTINCT\$" "$D/out")
[ "$n" -eq 2 ] || fail "'verified $DISTINCT/$DISTINCT' printed $n times, not 2"
grep -q 'lost=0 stale=0 errors=0$' "$D/out" \
    || fail "no 'lost=0 stale=0 errors=0' line from the load"
grep -q 'missing=0 different=0 errors=0' "$D/out" \
    || fail "no 'missing=0 different=0 errors=0' line from the reader"
grep -q '^demo passed in ' "$D/out" || fail "no 'demo passed' line"
[ -n "$PIDS_SEEN" ] || fail "no PID file was ever seen in $D/demo"
for p in $PIDS_SEEN; do
    if alive "$p" && tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q brim
    then
        fail "pid $p ($(tr '\0' ' ' <"/proc/$p/cmdline")) still runs after the demo"
    fi
done
# Nor anything else started on the demo's files (the coordinator's state,
# the reader of the data file).
for f in /proc/[0-9]*/cmdline; do
    if tr '\0' ' ' <"$f" 2>/dev/null | grep -qF "$D/demo/"; then
        fail "still running after the demo: $(tr '\0' ' ' <"$f")"
    fi
done
ls "$D"/demo/*.pid >/dev/null 2>&1 && fail "PID files left: $(ls "$D"/demo/*.pid)"
grep -E '^(verified|  run:|  lost=|  reads=)' "$D/out"
rm -rf "$D"
echo "ok demo_slice"
