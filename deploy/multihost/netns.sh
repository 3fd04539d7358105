#!/usr/bin/env bash
# deploy/multihost/netns.sh - test hosts on one machine, built from network
# namespaces and veth pairs, for brim's multi-host fault tests (issue 6).
#
#   netns.sh up N [--prefix P]      N hosts P"h0".."h(N-1)", one switch P"sw"
#   netns.sh down [--prefix P]      remove all of them (also after a crash)
#   netns.sh cut I [--prefix P]     host I's link down, both ends
#   netns.sh heal I [--prefix P]    host I's link up again
#   netns.sh [--prefix P] exec I CMD...   run CMD in host I
#   netns.sh status [--prefix P]
#
# Host I is namespace P"hI" with loopback up and one interface, eth0,
# address 10.77.0.(10+I)/24; its veth peer "hI" is a port of bridge br0 in
# the switch namespace P"sw". Nothing is added to the calling namespace:
# only the hosts' own addresses exist, and they reach one another through
# the switch alone. See deploy/multihost/README.md.
#
# Exit codes: 0 done; 1 failed; 64 usage; 77 cannot run here (not root, or
# no "ip netns"): a test treats 77 as "skipped", never as passed.
set -u

PROG=netns.sh
PREFIX=${BRIM_NETNS_PREFIX:-brim}
SUBNET=10.77.0           # /24; host I is .(10+I)
MAX_HOSTS=200

usage() {
    cat <<'EOF'
usage: netns.sh [--prefix P] COMMAND [args]

Test hosts made of network namespaces on this machine (as root).

commands:
  up N        build a switch namespace Psw holding bridge br0, and hosts
              Ph0..Ph(N-1) (N 1..200): each a namespace with loopback up
              and eth0 at 10.77.0.(10+I)/24, a veth into the bridge.
              Refuses when hosts of prefix P exist (run down first).
  down        remove every namespace of prefix P (Psw, Ph<digits>): the
              processes still inside are sent TERM, then KILL after 5 s,
              each named by PID; then the namespaces are deleted, which
              removes their veths and the bridge. Idempotent; needs no
              record of what up made, so it also cleans up after a crash.
  cut I       link down on both ends of host I's veth (eth0 in PhI, hI in
              Psw): host I can reach nobody and nobody can reach it; its
              own address still answers inside PhI.
  heal I      link up on both ends again.
  exec I CMD...
              run CMD inside host I (exec ip netns exec PhI CMD...: the
              process keeps this script's PID); --prefix, if any, goes
              before "exec"
  status      the namespaces of prefix P, their links, addresses and the
              PIDs inside.

--prefix P (default $BRIM_NETNS_PREFIX, else "brim"): letters, digits,
'_' and '-', 1 to 24 characters; hosts of different prefixes are
separate networks, so tests may run side by side.

Exit codes: 0 done, 1 failed, 64 usage, 77 cannot run here (not root, or
iproute2 without "ip netns").
EOF
}

say() { echo "$PROG: $*"; }
die() { echo "$PROG: $*" >&2; exit 1; }
usage_err() { echo "$PROG: $*" >&2; echo "try: $PROG --help" >&2; exit 64; }
cannot() { echo "$PROG: cannot run here: $*" >&2; exit 77; }

# Run and print one command; fail the script if it fails.
run() {
    echo "+ $*"
    "$@" || die "failed: $*"
}

need_netns() {
    [ "$(id -u)" = 0 ] || cannot "needs root (network namespaces); try sudo"
    command -v ip >/dev/null 2>&1 \
        || cannot "no 'ip' command (Debian package iproute2)"
    ip netns list >/dev/null 2>&1 \
        || cannot "'ip netns' does not work (iproute2 too old, or no" \
                  "network namespace support in this kernel)"
}

sw_ns() { echo "${PREFIX}sw"; }
host_ns() { echo "${PREFIX}h$1"; }

# The namespaces of PREFIX, one a line.
our_namespaces() {
    ip netns list 2>/dev/null | awk '{print $1}' \
        | grep -E "^${PREFIX}(h[0-9]+|sw)\$" | sort
}

ns_exists() {
    our_namespaces | grep -qx "$1"
}

check_host() {   # I
    if ! [[ "$1" =~ ^[0-9]+$ ]] || [ "$1" -ge "$MAX_HOSTS" ]; then
        usage_err "bad host number: $1 (0 to $((MAX_HOSTS - 1)))"
    fi
    ns_exists "$(host_ns "$1")" \
        || die "no host $1 (namespace $(host_ns "$1"));" \
               "run: $PROG up N --prefix $PREFIX"
}

cmd_up() {   # N
    local n=$1 i sw ns
    if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt "$MAX_HOSTS" ]
    then
        usage_err "up needs N, 1 to $MAX_HOSTS"
    fi
    need_netns
    if [ -n "$(our_namespaces)" ]; then
        die "namespaces of prefix $PREFIX exist already ($(our_namespaces \
            | tr '\n' ' ')); run: $PROG down --prefix $PREFIX"
    fi
    # Half a network is worse than none: undo everything on a failure.
    trap 'echo "$PROG: up failed; removing what it made" >&2; cmd_down' EXIT
    sw=$(sw_ns)
    run ip netns add "$sw"
    run ip -n "$sw" link set lo up
    # No STP: a port forwards as soon as it is up.
    run ip -n "$sw" link add br0 type bridge stp_state 0 forward_delay 0
    run ip -n "$sw" link set br0 up
    for ((i = 0; i < n; i++)); do
        ns=$(host_ns "$i")
        run ip netns add "$ns"
        run ip -n "$ns" link set lo up
        run ip link add eth0 netns "$ns" type veth peer name "h$i" netns "$sw"
        run ip -n "$sw" link set "h$i" master br0
        run ip -n "$sw" link set "h$i" up
        run ip -n "$ns" addr add "$SUBNET.$((10 + i))/24" dev eth0
        run ip -n "$ns" link set eth0 up
    done
    trap - EXIT
    say "up: $n hosts, $(host_ns 0)..$(host_ns $((n - 1))) at" \
        "$SUBNET.10..$SUBNET.$((9 + n)), switch $sw"
}

# TERM the processes inside namespace NS, KILL what is left after 5 s.
stop_inside() {   # NS
    local ns=$1 pids pid t
    pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
    [ -n "${pids// /}" ] || return 0
    for pid in $pids; do
        say "down: TERM pid $pid in $ns ($(tr '\0' ' ' \
            <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-100))"
        kill -TERM "$pid" 2>/dev/null
    done
    for ((t = 0; t < 50; t++)); do
        pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
        [ -n "${pids// /}" ] || return 0
        sleep 0.1
    done
    for pid in $pids; do
        say "down: KILL pid $pid in $ns (still running after 5 s)"
        kill -KILL "$pid" 2>/dev/null
    done
}

cmd_down() {
    local ns found=0 rc=0
    need_netns
    for ns in $(our_namespaces); do
        found=1
        stop_inside "$ns"
        echo "+ ip netns del $ns"
        # Someone else's down may have been quicker: gone is gone.
        if ! ip netns del "$ns" 2>/dev/null && ns_exists "$ns"; then
            echo "$PROG: cannot delete $ns" >&2
            rc=1
        fi
    done
    if [ "$found" = 0 ]; then
        say "down: no namespaces of prefix $PREFIX"
    else
        say "down: prefix $PREFIX removed"
    fi
    return "$rc"
}

cmd_link() {   # I up|down
    local i=$1 state=$2
    need_netns
    check_host "$i"
    ns_exists "$(sw_ns)" || die "no switch namespace $(sw_ns)"
    run ip -n "$(host_ns "$i")" link set eth0 "$state"
    run ip -n "$(sw_ns)" link set "h$i" "$state"
    if [ "$state" = down ]; then
        say "cut: host $i ($SUBNET.$((10 + i))) is off the network"
    else
        say "heal: host $i ($SUBNET.$((10 + i))) is back on the network"
    fi
}

cmd_exec() {   # I CMD...
    local i=$1
    shift
    [ $# -gt 0 ] || usage_err "exec needs a command"
    need_netns
    check_host "$i"
    echo "$PROG: exec in $(host_ns "$i"): $*" >&2
    exec ip netns exec "$(host_ns "$i")" "$@"
}

cmd_status() {
    local ns pids
    need_netns
    if [ -z "$(our_namespaces)" ]; then
        say "status: no namespaces of prefix $PREFIX"
        return 0
    fi
    for ns in $(our_namespaces); do
        pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
        echo "$ns: pids ${pids:-none}"
        ip -n "$ns" -brief addr show 2>/dev/null | sed 's/^/    /'
    done
}

main() {
    local -a args=()
    local cmd
    # --prefix may come anywhere before an exec's command.
    while [ $# -gt 0 ]; do
        case "$1" in
        -h|--help|help) usage; exit 0 ;;
        --prefix)
            [ $# -ge 2 ] || usage_err "--prefix needs a value"
            PREFIX=$2; shift 2 ;;
        --prefix=*) PREFIX=${1#--prefix=}; shift ;;
        *)
            args+=("$1"); shift
            # After "exec I", everything is the command.
            if [ "${args[0]}" = exec ] && [ ${#args[@]} -eq 2 ]; then
                args+=("$@")
                break
            fi
            ;;
        esac
    done
    [[ "$PREFIX" =~ ^[A-Za-z0-9_-]{1,24}$ ]] \
        || usage_err "bad prefix: '$PREFIX' (letters, digits, _ and -;" \
                     "1 to 24)"
    [ ${#args[@]} -gt 0 ] || { usage >&2; exit 64; }
    cmd=${args[0]}
    case "$cmd" in
    up)
        [ ${#args[@]} -eq 2 ] || usage_err "usage: $PROG up N [--prefix P]"
        cmd_up "${args[1]}" ;;
    down)
        [ ${#args[@]} -eq 1 ] || usage_err "down takes no argument"
        cmd_down ;;
    cut|heal)
        [ ${#args[@]} -eq 2 ] || usage_err "usage: $PROG $cmd I [--prefix P]"
        if [ "$cmd" = cut ]; then
            cmd_link "${args[1]}" down
        else
            cmd_link "${args[1]}" up
        fi ;;
    exec)
        [ ${#args[@]} -ge 3 ] || usage_err "usage: $PROG exec I CMD..."
        cmd_exec "${args[@]:1}" ;;
    status)
        [ ${#args[@]} -eq 1 ] || usage_err "status takes no argument"
        cmd_status ;;
    *) usage_err "unknown command: $cmd" ;;
    esac
}

main "$@"
