#!/usr/bin/env bash
# tests/cluster/cluster_launcher_etcd.sh - deploy/brim-cluster up --etcd 3
# (issue 15 item 7) end to end on loopback: three etcd members, two
# coordinators, two nodes; status names the leader; the leader SIGKILLed,
# add-node and remove-node still work (the other coordinator leads, and
# remove-node's brimctl leave goes to it); down stops every
# process, each checked gone by its PID. Skipped (77) without etcd.
#   cluster_launcher_etcd.sh SCRIPT BINDIR
set -u
SCRIPT=$1
export BRIM_BIN=$2
command -v etcd >/dev/null || { echo "SKIP: no etcd (etcd-server)"; exit 77; }
LAUNCHER_PREFIX=brim-launcher-etcd
# shellcheck source=launcher_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/launcher_lib.sh"
# A base port with the ports brim-cluster uses above it free: the nodes
# (BASE+1..), their memcached ports (+1000), coord2 (+1999), etcd (+2000..).
BASE=$(python3 "$(dirname "${BASH_SOURCE[0]}")/../support/ports.py" --cluster 4 --etcd 3)

out=$("$SCRIPT" up --nodes 2 --dir "$D" --base-port "$BASE" --partitions 256 --etcd 3) \
    || fail "up: $out"
echo "$out" | grep -q "epoch [0-9]* committed: 2 members" || fail "up output: $out"
for f in coord coord2 etcd-e1 etcd-e2 etcd-e3 node1 node2; do
    [ -s "$D/$f.pid" ] || fail "no $f.pid"
done
st=$("$SCRIPT" status --dir "$D") || fail "status: $st"
[ "$(echo "$st" | grep -c running)" = 7 ] || fail "status: $st"
echo "$st" | grep -q "leading coordinator: coord c1 127.0.0.1:$BASE" || fail "leader: $st"
PIDS="$(cat "$D"/*.pid)"
kill -KILL "$(cat "$D/coord.pid")"
"$SCRIPT" add-node node3 --dir "$D" | grep -q "3 members" || fail "add-node after the leader's death"
st=$("$SCRIPT" status --dir "$D") || fail "status after the kill: $st"
echo "$st" | grep -q "leading coordinator: coord2 c2" || fail "new leader: $st"
# remove-node asks the leader (brimctl leave), wherever it is now.
"$SCRIPT" remove-node node1 --dir "$D" | grep -q "removed node1" || fail "remove-node"
"$SCRIPT" status --dir "$D" | grep -q "last committed: epoch [0-9]*, 2 members" \
    || fail "status after remove-node"
"$SCRIPT" down --dir "$D" >/dev/null || fail "down"
for p in $PIDS $(cat "$D"/node3.pid 2>/dev/null); do
    alive "$p" && fail "pid $p still runs after down"
done
ls "$D"/*.pid >/dev/null 2>&1 && fail "pid files left: $(ls "$D"/*.pid)"
echo "PASS cluster_launcher_etcd"
