# tests/cluster/launcher_lib.sh - what the deploy/brim-cluster tests
# share (cluster_launcher.sh, cluster_launcher_etcd.sh), sourced after
# SCRIPT and BRIM_BIN are set: a scratch directory D, fail (the logs, then
# down), alive PID, and a trap that runs down and removes D on exit.
#   LAUNCHER_PREFIX=brim-launcher . launcher_lib.sh
D=$(mktemp -d "/tmp/${LAUNCHER_PREFIX:-brim-launcher}.XXXXXX")
fail() { echo "FAIL: $*"; tail -n 20 "$D"/*.log; "$SCRIPT" down --dir "$D" >/dev/null 2>&1; exit 1; }
alive() {   # PID runs (a zombie not yet reaped counts as gone)
    kill -0 "$1" 2>/dev/null || return 1
    [ "$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]
}
trap '"$SCRIPT" down --dir "$D" >/dev/null 2>&1; rm -rf "$D"' EXIT
