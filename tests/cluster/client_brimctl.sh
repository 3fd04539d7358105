#!/usr/bin/env bash
# tests/cluster/client_brimctl.sh - brimctl against a real brim-node on a
# free loopback port: outputs, binary-safe stdin/stdout, TTL, stats (plain
# and --json), flush, the value and key limits, and the exit statuses (0
# done, 1 the server said no, 2 could not talk to the server, 64 usage,
# which includes a key of 0 bytes or over the node's limit).
#
#   client_brimctl.sh --node BRIM_NODE --ctl BRIMCTL CASE
#
# CASE: basics binary ttl stats flush limits unreachable usage. The node is
# stopped by PID on exit; every wait is bounded.
set -euo pipefail

node_bin=""
ctl_bin=""
while [ $# -gt 1 ]; do
    case $1 in
    --node) node_bin=$2; shift 2 ;;
    --ctl) ctl_bin=$2; shift 2 ;;
    *) break ;;
    esac
done
case_name=${1:?usage: client_brimctl.sh --node BIN --ctl BIN CASE}
[ -x "$node_bin" ] || { echo "no brim-node at '$node_bin'"; exit 1; }
[ -x "$ctl_bin" ] || { echo "no brimctl at '$ctl_bin'"; exit 1; }

tmp=$(mktemp -d)
node_pid=""
helper_pid=""
cleanup() {
    for pid in $node_pid $helper_pid; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in $node_pid $helper_pid; do
        # Bounded: SIGKILL if it has not gone after 3 s.
        for _ in $(seq 30); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$tmp"
}
trap cleanup EXIT

failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# A free port below the ephemeral range (tests/support/ports.py).
free_port() {
    python3 "$(dirname "$0")/../support/ports.py"
}

# start_node [NODE_ARGS...]: a brim-node on a free port; $server is it.
start_node() {
    local port tries
    for tries in 1 2 3; do
        port=$(free_port)
        "$node_bin" --standalone --listen "127.0.0.1:$port" "$@" \
            >"$tmp/node.log" 2>&1 &
        node_pid=$!
        for _ in $(seq 100); do
            if ! kill -0 "$node_pid" 2>/dev/null; then
                break           # exited: port taken? try another
            fi
            if python3 -c 'import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port" \
                2>/dev/null
            then
                server="127.0.0.1:$port"
                return 0
            fi
            sleep 0.1
        done
        kill -9 "$node_pid" 2>/dev/null || true
        wait "$node_pid" 2>/dev/null || true
        node_pid=""
    done
    echo "brim-node did not start"; cat "$tmp/node.log"; exit 1
}

stop_node() {
    kill "$node_pid" 2>/dev/null || true
    for _ in $(seq 30); do
        kill -0 "$node_pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -9 "$node_pid" 2>/dev/null || true
    wait "$node_pid" 2>/dev/null || true
    node_pid=""
}

# ctl ARGS...: run brimctl against the node; status in $rc, output in
# $tmp/out and $tmp/err.
ctl() {
    rc=0
    timeout 20 "$ctl_bin" --server "$server" "$@" >"$tmp/out" 2>"$tmp/err" \
        || rc=$?
}

expect_rc() {
    local want=$1
    shift
    if [ "$rc" -ne "$want" ]; then
        fail "$* exited $rc, want $want; stderr: $(head -c 300 "$tmp/err")"
    fi
}

expect_out() {
    local want=$1
    shift
    if [ "$(cat "$tmp/out")" != "$want" ]; then
        fail "$*: stdout '$(head -c 100 "$tmp/out")', want '$want'"
    fi
}

expect_err() {
    local want=$1
    shift
    if ! grep -q -- "$want" "$tmp/err"; then
        fail "$*: stderr lacks '$want': $(head -c 300 "$tmp/err")"
    fi
}

case_basics() {
    start_node
    ctl ping; expect_rc 0 ping; grep -q pong "$tmp/out" || fail "ping: no pong"
    ctl set greeting "hello world"; expect_rc 0 set
    ctl get greeting; expect_rc 0 get; expect_out "hello world" get
    # Raw output: no newline added.
    [ "$(wc -c <"$tmp/out")" -eq 11 ] || fail "get: output is not raw"
    ctl set f v --flags 7 --ttl 0; expect_rc 0 "set --flags --ttl"
    ctl get missing; expect_rc 1 "get missing"; expect_err "not found" "get"
    [ -s "$tmp/out" ] && fail "get missing wrote to stdout"
    ctl del greeting; expect_rc 0 del
    ctl del greeting; expect_rc 1 "del missing"; expect_err "not found" "del"
    ctl get greeting; expect_rc 1 "get deleted"
    ctl set dash -- -5; expect_rc 0 "set -- -5"
    ctl get dash; expect_out "-5" "get dash"
    # Global options may follow the command.
    rc=0
    timeout 20 "$ctl_bin" get dash --server "$server" >"$tmp/out" \
        2>"$tmp/err" || rc=$?
    expect_rc 0 "get with --server last"; expect_out "-5" "get dash"
}

case_binary() {
    start_node
    head -c 100000 /dev/urandom >"$tmp/rnd"
    printf 'a\0b\0\377' >>"$tmp/rnd"
    rc=0
    timeout 20 "$ctl_bin" --server "$server" set bin - <"$tmp/rnd" \
        2>"$tmp/err" || rc=$?
    expect_rc 0 "set bin -"
    ctl get bin; expect_rc 0 "get bin"
    cmp -s "$tmp/out" "$tmp/rnd" || fail "binary value changed in transit"
    # An empty stdin stores the empty value.
    rc=0
    timeout 20 "$ctl_bin" --server "$server" set empty - </dev/null \
        2>"$tmp/err" || rc=$?
    expect_rc 0 "set empty -"
    ctl get empty; expect_rc 0 "get empty"
    [ -s "$tmp/out" ] && fail "empty value came back non-empty"
    return 0
}

case_ttl() {
    # The node counts TTLs in whole Unix seconds (as memcached): a TTL of
    # N s ends N-1 to N s after the write, so "still there" gets 2 s.
    start_node
    ctl set one v --ttl 1; expect_rc 0 "set --ttl 1"
    ctl set short v --ttl 2; expect_rc 0 "set --ttl 2"
    ctl set long v --ttl 100; expect_rc 0 "set --ttl 100"
    ctl get short; expect_rc 0 "get short before expiry"
    sleep 3
    ctl get one; expect_rc 1 "get one after 3 s"
    ctl get short; expect_rc 1 "get short after 3 s"
    ctl get long; expect_rc 0 "get long after 3 s"
}

case_stats() {
    start_node
    ctl set a 1; ctl set b 2
    ctl stats; expect_rc 0 stats
    grep -Eq '^keys +2$' "$tmp/out" || fail "stats: no 'keys 2' line"
    # Aligned: every value starts in the same column.
    awk '{ match($0, /  +[^ ]/); c[RSTART + RLENGTH] = 1 }
         END { n = 0; for (k in c) n++; exit n == 1 ? 0 : 1 }' "$tmp/out" \
        || fail "stats: values not aligned"
    ctl stats --json; expect_rc 0 "stats --json"
    python3 - "$tmp/out" "$server" <<'EOF' || fail "stats --json: bad JSON"
import json, sys
doc = json.load(open(sys.argv[1]))
node = doc["nodes"][0]
assert node["addr"] == sys.argv[2], node["addr"]
assert node["stats"]["keys"] == 2, node["stats"]["keys"]
assert isinstance(node["stats"]["memory_limit"], int)
EOF
    # A section the node does not have: the node says INVAL, bad usage.
    ctl stats bogus; expect_rc 64 "stats bogus"
    expect_err "unknown section" "stats bogus"
}

case_flush() {
    start_node
    ctl set a 1; ctl set b 2
    ctl flush; expect_rc 0 flush
    ctl get a; expect_rc 1 "get after flush"
    ctl get b; expect_rc 1 "get after flush"
    ctl set c 3; ctl get c; expect_out 3 "set after flush"
}

case_limits() {
    start_node
    # 1 MiB is the default limit: exactly that passes, one byte more not.
    head -c 1048576 /dev/zero >"$tmp/max"
    rc=0
    timeout 20 "$ctl_bin" --server "$server" set big - <"$tmp/max" \
        2>"$tmp/err" || rc=$?
    expect_rc 0 "set 1 MiB"
    ctl get big; cmp -s "$tmp/out" "$tmp/max" || fail "1 MiB value changed"
    head -c 1048577 /dev/zero >"$tmp/over"
    rc=0
    timeout 20 "$ctl_bin" --server "$server" set big - <"$tmp/over" \
        2>"$tmp/err" || rc=$?
    expect_rc 1 "set 1 MiB + 1"; expect_err "larger than" "set too big"
    ctl set k "$(head -c 300 /dev/zero | tr '\0' x)"
    expect_rc 0 "300-byte value"
    # A key libbrim refuses is bad usage (64), not the server's no (1),
    # and the message names the length and the limit.
    ctl get "$(head -c 250 /dev/zero | tr '\0' k)"
    expect_rc 1 "250-byte key (absent)"
    local op
    for op in get del set; do
        if [ "$op" = set ]; then
            ctl set "$(head -c 251 /dev/zero | tr '\0' k)" v
        else
            ctl "$op" "$(head -c 251 /dev/zero | tr '\0' k)"
        fi
        expect_rc 64 "$op 251-byte key"
        expect_err "key is 251 bytes, allowed 1 .. 250" "$op 251-byte key"
    done
    ctl set "" v; expect_rc 64 "set empty key"
    expect_err "key is 0 bytes, allowed 1 .. 250" "set empty key"
    # The limit is the node's: one started with --max-key-bytes 16.
    stop_node
    start_node --max-key-bytes 16
    ctl set "$(head -c 16 /dev/zero | tr '\0' k)" v; expect_rc 0 "16-byte key"
    ctl get "$(head -c 17 /dev/zero | tr '\0' k)"; expect_rc 64 "17-byte key"
    expect_err "key is 17 bytes, allowed 1 .. 16" "17-byte key"
}

case_unreachable() {
    local port t0 t1
    port=$(free_port)
    server="127.0.0.1:$port"
    ctl get x; expect_rc 2 "refused"; expect_err "127.0.0.1:$port" "refused"
    expect_err "refused" "refused"
    # A listener that never answers: the timeout bounds the wait.
    python3 - "$tmp/port" <<'EOF' &
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(30)
EOF
    helper_pid=$!
    for _ in $(seq 100); do
        [ -s "$tmp/port" ] && break
        sleep 0.1
    done
    server="127.0.0.1:$(cat "$tmp/port")"
    t0=$(date +%s%N)
    ctl --timeout-ms 300 ping
    t1=$(date +%s%N)
    expect_rc 2 "silent listener"; expect_err "timed out" "silent listener"
    expect_err "$server" "silent listener"
    [ $(((t1 - t0) / 1000000)) -lt 2000 ] || fail "timeout took too long"
}

case_usage() {
    server=127.0.0.1:1          # never contacted
    ctl --help; expect_rc 0 "--help"; grep -q "usage: brimctl" "$tmp/out" \
        || fail "--help: no usage"
    ctl set --help; expect_rc 0 "set --help"; grep -q -- "--ttl" "$tmp/out" \
        || fail "set --help: no --ttl"
    ctl; expect_rc 64 "no command"
    ctl help; expect_rc 0 "help"; grep -q "usage: brimctl" "$tmp/out" \
        || fail "help: no usage"
    ctl help set; expect_rc 0 "help set"; grep -q -- "--ttl" "$tmp/out" \
        || fail "help set: no --ttl"
    ctl frobnicate; expect_rc 64 "unknown command"
    # Another tool's word for one of ours names ours (a tester's find).
    ctl cluster; expect_rc 64 "cluster"
    expect_err "unknown command: cluster: the cluster's views are 'stats' and 'nodes'" "cluster"
    ctl frobnicate; expect_err "unknown command: frobnicate" "frobnicate"
    ctl get; expect_rc 64 "get without key"
    ctl get a b; expect_rc 64 "get with two keys"
    ctl get a --ttl 5; expect_rc 64 "--ttl on get"
    ctl set a b --ttl x; expect_rc 64 "--ttl x"
    ctl set a b --bogus; expect_rc 64 "unknown option"
    # The range named is the one accepted: 0 is refused too.
    ctl --timeout-ms 0 ping; expect_rc 64 "--timeout-ms 0"
    expect_err '"0" is not a number 1 .. 4294967295' "--timeout-ms 0"
    ctl --timeout-ms -5 ping; expect_rc 64 "--timeout-ms -5"
    expect_err '"-5" is not a number 1 .. 4294967295' "--timeout-ms -5"
    ctl set a b --ttl -1; expect_rc 64 "--ttl -1"
    expect_err '"-1" is not a number 0 .. 4294967295' "--ttl -1"
    # The empty key is refused before any connection (none is possible).
    for op in get del; do
        ctl "$op" ""; expect_rc 64 "$op empty key"
        expect_err 'key is 0 bytes, allowed 1 .. 250' "$op empty key"
    done
    rc=0
    timeout 20 "$ctl_bin" --server nonsense ping >"$tmp/out" 2>"$tmp/err" \
        || rc=$?
    expect_rc 64 "bad address"
}

case "$case_name" in
basics | binary | ttl | stats | flush | limits | unreachable | usage)
    "case_$case_name" ;;
*) echo "unknown case $case_name"; exit 1 ;;
esac
if [ "$failures" -ne 0 ]; then
    echo "$case_name: $failures failure(s)"
    exit 1
fi
echo "$case_name: ok"
