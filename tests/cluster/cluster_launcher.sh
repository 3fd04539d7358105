#!/usr/bin/env bash
# tests/cluster/cluster_launcher.sh - deploy/brim-cluster end to end on
# loopback: up (3 nodes), a second up refused, status, add-node,
# remove-node (graceful: SIGTERM leave), the last node refused, down;
# every process checked gone by its PID.
#   cluster_launcher.sh SCRIPT BINDIR
set -u
SCRIPT=$1
export BRIM_BIN=$2
# shellcheck source=launcher_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/launcher_lib.sh"
# A base port with 6 free ports after it, and their memcached ports.
BASE=$(python3 "$(dirname "${BASH_SOURCE[0]}")/../support/ports.py" --cluster 7)

"$SCRIPT" --help | grep -q "remove-node" || fail "--help"
out=$("$SCRIPT" up --nodes 3 --dir "$D" --base-port "$BASE" --partitions 256) || fail "up: $out"
echo "$out" | grep -q "epoch [0-9]* committed: 3 members" || fail "up output: $out"
for f in coord node1 node2 node3; do
    [ -s "$D/$f.pid" ] || fail "no $f.pid"
    [ -f "$D/$f.log" ] || fail "no $f.log"
done
tr '\0' ' ' <"/proc/$(cat "$D/coord.pid")/cmdline" | grep -q -- "--listen 127.0.0.1:$BASE " \
    || fail "coord port"
"$SCRIPT" up --nodes 3 --dir "$D" --base-port "$BASE" >/dev/null 2>&1 && fail "second up accepted"
"$SCRIPT" status --dir "$D" | grep -c running | grep -q 4 || fail "status"
# node4 would take BASE+4; hold its memcached port as a client's local
# port (a connection to the coordinator), which stops a listener's bind
# though nothing listens there: add-node must pass over to BASE+5.
python3 -c '
import socket, sys, time
c = socket.socket()
c.bind(("127.0.0.1", int(sys.argv[1])))
c.connect(("127.0.0.1", int(sys.argv[2])))
print("held", flush=True)
time.sleep(120)' $((BASE + 4 + 1000)) "$BASE" >"$D/holder.out" 2>&1 &
holder=$!
for _ in $(seq 50); do grep -q held "$D/holder.out" && break; sleep 0.1; done
grep -q held "$D/holder.out" || fail "could not hold port $((BASE + 1004)): $(cat "$D/holder.out")"
out=$("$SCRIPT" add-node node4 --dir "$D") || fail "add-node: $out"
kill "$holder"
echo "$out" | grep -q "4 members" || fail "add-node: $out"
echo "$out" | grep -q "added node4 at 127.0.0.1:$((BASE + 5)) " \
    || fail "add-node did not pass over the port whose memcached port is held: $out"
PIDS="$(cat "$D"/*.pid)"
p2=$(cat "$D/node2.pid")
"$SCRIPT" remove-node node2 --dir "$D" || fail "remove-node"
alive "$p2" && fail "node2 still runs"
[ -e "$D/node2.pid" ] && fail "node2.pid left"
grep -q "left the cluster" "$D/node2.log" || fail "node2 did not leave gracefully"
"$SCRIPT" status --dir "$D" | grep -q "3 members" || fail "status after remove"
# A node stopped by hand (Ctrl-C: it leaves), then added again under its
# name: one row for it, at its new address (a tester saw two, and status
# gave the new PID beside the old address).
p3=$(cat "$D/node3.pid")
kill -INT "$p3"
for _ in $(seq 200); do alive "$p3" || break; sleep 0.1; done
alive "$p3" && fail "node3 still runs 20 s after SIGINT"
out=$("$SCRIPT" add-node node3 --dir "$D") || fail "add-node node3 again: $out"
addr=$(echo "$out" | sed -n 's/^added node3 at \([^ ]*\) .*/\1/p')
[ -n "$addr" ] || fail "add-node node3 again: $out"
[ "$(grep -c '^node3 ' "$D/nodes")" = 1 ] || fail "node3 rows in nodes: $(cat "$D/nodes")"
grep -q "^node3 $addr\$" "$D/nodes" || fail "node3's row is not $addr: $(cat "$D/nodes")"
[ "$(grep -c '^node3 ' "$D/memcached")" = 1 ] || fail "node3 rows in memcached: $(cat "$D/memcached")"
"$SCRIPT" status --dir "$D" | grep "node3" | grep -q "$addr" || fail "status: node3 not at $addr"
PIDS="$PIDS $(cat "$D/node3.pid")"
"$SCRIPT" down --dir "$D" >/dev/null || fail "down"
for p in $PIDS; do
    alive "$p" && fail "pid $p still runs after down"
done
ls "$D"/*.pid >/dev/null 2>&1 && fail "PID files left"
echo "ok cluster_launcher"
