# shellcheck shell=bash
# deploy/lib.sh - shell functions shared by the deploy scripts; sourced,
# never run:   . "$root/deploy/lib.sh"
#
# brim_missing_packages ROOT  print the packages of ROOT/deploy/packages.txt
#                             that dpkg does not have installed, one a line
# brim_install_packages ROOT  install those (as root; as anyone else print
#                             the apt-get command and return 1); returns 0
#                             when nothing is missing or dpkg is absent
# brim_build ROOT DIR [TARGET...]
#                             configure DIR (RelWithDebInfo) when it has no
#                             CMakeCache.txt yet, then build the TARGETs
#                             (all when none) on every core; incremental
# brim_free_ports COUNT [FIRST]
#                             print a base port B such that B .. B+COUNT-1
#                             are free on 127.0.0.1: FIRST if it is (when
#                             given), else a random one in 20000..32767
#                             (below the ephemeral range, 32768 up)

# The package list lives in one place, deploy/packages.txt.
brim_missing_packages() {
    local root=$1 pkg status
    while read -r pkg; do
        pkg=${pkg%%#*}
        pkg=${pkg//[[:space:]]/}
        [ -n "$pkg" ] || continue
        status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null \
                 || true)
        if [ "${status:0:2}" != "ii" ]; then
            printf '%s\n' "$pkg"
        fi
    done < "$root/deploy/packages.txt"
}

brim_install_packages() {
    local root=$1
    local -a missing
    if [ ! -r "$root/deploy/packages.txt" ]; then
        echo "$root/deploy/packages.txt missing" >&2
        return 1
    fi
    if ! command -v dpkg-query > /dev/null 2>&1; then
        echo "dpkg-query not found: not Debian; skipping the package check" \
             "(install the equivalents of deploy/packages.txt yourself)"
        return 0
    fi
    mapfile -t missing < <(brim_missing_packages "$root")
    if [ "${#missing[@]}" -eq 0 ]; then
        echo "all present"
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "missing: ${missing[*]}"
        echo "run as root, or install them first:"
        echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive" \
             "apt-get install -y --no-install-recommends ${missing[*]}"
        return 1
    fi
    echo "installing: ${missing[*]}"
    apt-get update || return 1
    DEBIAN_FRONTEND=noninteractive apt-get install -y \
        --no-install-recommends "${missing[@]}"
}

brim_build() {
    local root=$1 dir=$2 jobs t
    local -a targets=()
    shift 2
    for t in "$@"; do
        targets+=(--target "$t")
    done
    if [ ! -f "$dir/CMakeCache.txt" ]; then
        cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            || return 1
    fi
    jobs=$(nproc 2> /dev/null || echo 2)
    cmake --build "$dir" -j "$jobs" "${targets[@]}"
}

brim_free_ports() {
    python3 - "$@" <<'EOF'
import random, socket, sys

count = int(sys.argv[1])
first = int(sys.argv[2]) if len(sys.argv) > 2 else None

def free(base):
    for port in range(base, base + count):
        s = socket.socket()
        # As the daemons' listeners do (libuv sets SO_REUSEADDR): a port
        # whose last connections linger in TIME_WAIT is free.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        finally:
            s.close()
    return True

if first is not None and first + count <= 65536 and free(first):
    print(first)
    sys.exit(0)
rng = random.Random()
for _ in range(200):
    base = rng.randrange(20000, 32768 - 64)
    if free(base):
        print(base)
        sys.exit(0)
sys.exit(1)
EOF
}

# brim_bench_args SCRIPT MAX ARG...
#                             the arguments of a deploy/bench script, before
#                             it starts anything: -h or --help prints the
#                             script's header comment (its usage) and exits
#                             0; an option, an argument that is not a whole
#                             number, or more than MAX of them is one line on
#                             stderr and exit 2. Pure bash: runs no command.
brim_bench_args() {
    local script=$1 max=$2 line n=0 arg
    shift 2
    for arg in "$@"; do
        case $arg in
        -h|--help)
            { read -r line   # the #! line
              while IFS= read -r line && [ "${line:0:1}" = "#" ]; do
                  line=${line#\#}
                  printf '%s\n' "${line# }"
              done; } < "$script"
            exit 0 ;;
        esac
    done
    for arg in "$@"; do
        n=$((n + 1))
        if [ "${arg:0:1}" = "-" ]; then
            echo "${script##*/}: unknown option \"$arg\"; see --help" >&2
            exit 2
        fi
        if ! [[ $arg =~ ^[0-9]+$ ]]; then
            echo "${script##*/}: argument $n \"$arg\" is not a whole number; see --help" >&2
            exit 2
        fi
    done
    if [ "$n" -gt "$max" ]; then
        echo "${script##*/}: $n arguments, at most $max; see --help" >&2
        exit 2
    fi
}

# brim_bench_damon SCRIPT     say whether the kernel's DAMON monitor runs
#                             (kdamond: /sys/kernel/mm/damon/admin), which on
#                             the VMs measured stalls every process for 20 to
#                             90 ms every half second once a few GB are
#                             resident (docs/performance.md, "The machine's
#                             own stalls"). With BRIM_BENCH_DAMON=off in the
#                             environment, as root, it is turned off for the
#                             script's run and turned on again at its exit
#                             (the caller's EXIT trap must call
#                             brim_bench_damon_restore); =on (the default)
#                             leaves it as it is. Prints one line either way.
BRIM_DAMON_STOPPED=()
brim_bench_damon() {
    local script=${1##*/} f running=()
    for f in /sys/kernel/mm/damon/admin/kdamonds/*/state; do
        [ -r "$f" ] || continue
        [ "$(< "$f")" = on ] && running+=("$f")
    done
    case ${BRIM_BENCH_DAMON:-on} in
    on|off) ;;
    *) echo "$script: BRIM_BENCH_DAMON must be on or off (is \"$BRIM_BENCH_DAMON\")" >&2
       exit 2 ;;
    esac
    if [ "${#running[@]}" -eq 0 ]; then
        echo "$script: no DAMON monitor runs"
        return 0
    fi
    if [ "${BRIM_BENCH_DAMON:-on}" = on ]; then
        echo "$script: WARNING: a DAMON monitor runs (${running[*]}): expect" \
             "stalls of tens of ms every 0.5 s with GBs resident;" \
             "BRIM_BENCH_DAMON=off (root) pauses it for this run"
        return 0
    fi
    for f in "${running[@]}"; do
        if echo off > "$f" 2>/dev/null; then
            BRIM_DAMON_STOPPED+=("$f")
        else
            echo "$script: cannot turn off $f (not root?)" >&2
            exit 2
        fi
    done
    echo "$script: DAMON monitor turned off for this run (${BRIM_DAMON_STOPPED[*]}); on again at exit"
}

# brim_bench_damon_restore    turn on again what brim_bench_damon turned off.
brim_bench_damon_restore() {
    local f
    for f in "${BRIM_DAMON_STOPPED[@]}"; do
        echo on > "$f" 2>/dev/null || echo "could not turn $f on again" >&2
    done
    BRIM_DAMON_STOPPED=()
}
