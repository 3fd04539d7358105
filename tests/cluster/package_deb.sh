#!/usr/bin/env bash
# tests/cluster/package_deb.sh - the .deb (issue 16 item 6, acceptance 6):
# `cpack -G DEB` from an existing build into a temporary directory, then
#
#   contents  (deploy.deb_contents) without installing anything: the
#             package's dependencies (dpkg-deb --field) name the Debian
#             runtime libraries and adduser, and it recommends pkg-config;
#             its files (dpkg-deb -x into a temporary root) are the
#             binaries, libbrim, the headers, brim.pc, the two units, the
#             config and the examples; its
#             maintainer scripts parse (sh -n), /etc/brim/coord.conf is a
#             conffile, ldconfig is triggered; each unit's ExecStart names
#             a binary of the package, which answers --help; pkg-config
#             finds the package's headers and library; the units pass
#             `systemd-analyze verify` with no complaint (skipped, and said,
#             when systemd-analyze is absent); and the daemons, started as
#             the units start them (their ExecStart, the package's config
#             and example), form a cluster of two nodes that serves a key
#             and stop as `systemctl stop 'brim-node@*'` stops them (SIGTERM
#             to every node at once: each exits 0 within STOP_S seconds, the
#             coordinator logs that every member leaves), then the
#             coordinator on SIGTERM.
#   install   (deploy.deb_install) only when BRIM_DEB_INSTALL=1 (.ci/run
#             sets it; else exit 77, skipped), as root, on a machine where
#             no package brim is installed: dpkg -i, then /usr/bin/brim-node
#             --help, `pkg-config --cflags --libs brim` builds a program that
#             runs without LD_LIBRARY_PATH, the system user brim owns
#             /var/lib/brim/coord, the installed units verify, the same
#             cluster as above from /usr/bin as user brim (setpriv: systemd
#             is not PID 1 in CI), its state written in /var/lib/brim/coord,
#             then dpkg --purge leaves no file behind.
#
#   package_deb.sh contents|install BUILD_DIR SOURCE_DIR
#
# Exit 0 pass, 1 fail, 2 bad usage, 77 skipped.
set -euo pipefail

usage() {
    sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0" | sed '/^set /d'
}
case "${1:-}" in
-h | --help)
    usage
    exit 0
    ;;
contents | install) ;;
*)
    echo "usage: package_deb.sh contents|install BUILD_DIR SOURCE_DIR" >&2
    exit 2
    ;;
esac
[ $# -eq 3 ] || {
    echo "usage: package_deb.sh contents|install BUILD_DIR SOURCE_DIR" >&2
    exit 2
}
mode=$1
build=$(cd "$2" && pwd)
src=$(cd "$3" && pwd)
STOP_S=${BRIM_DEB_STOP_S:-15} # bound on a stop of every node at once

if [ "$mode" = install ] && [ "${BRIM_DEB_INSTALL:-}" != 1 ]; then
    echo "SKIP: BRIM_DEB_INSTALL is not 1 (dpkg -i changes this machine;" \
        ".ci/run sets it)"
    exit 77
fi

# shellcheck source=deploy/lib.sh
. "$src/deploy/lib.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/brim-deb.XXXXXX")
chmod 0755 "$tmp"
pids=()
installed=0
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill -KILL "$p" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    if [ "$installed" = 1 ]; then
        rm -f /etc/brim/node-n1.conf /etc/brim/node-n2.conf
        dpkg --purge brim >"$tmp/purge.log" 2>&1 || cat "$tmp/purge.log" >&2
    fi
    if [ "${BRIM_KEEP_LOGS:-}" = 1 ]; then
        echo "logs kept in $tmp"
    else
        rm -rf "$tmp"
    fi
}
trap cleanup EXIT

# ---- the package, from the build as it is ----
t0=$SECONDS
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/pkg" \
    >"$tmp/cpack.log" 2>&1 || {
    cat "$tmp/cpack.log" >&2
    fail "cpack -G DEB failed"
}
deb=$(find "$tmp/pkg" -maxdepth 1 -name 'brim_*.deb' | head -n 1)
[ -n "$deb" ] || fail "cpack made no brim_*.deb: $(ls "$tmp/pkg")"
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes) in" \
    "$((SECONDS - t0)) s"

# ---- shared checks ----

# verify_units DIR: systemd-analyze verify of DIR's units, an instance of
# the template included; any message about them is a failure (it says
# "ignoring" and exits 0 on a line it cannot parse). Messages about units
# of the machine itself are shown, not counted.
verify_units() {
    local dir=$1 out
    if ! command -v systemd-analyze >/dev/null 2>&1; then
        echo "SKIPPED CHECK: systemd-analyze not found, units not verified"
        return 0
    fi
    cp "$dir/brim-node@.service" "$dir/brim-node@n1.service"
    if ! out=$(systemd-analyze verify "$dir/brim-coord.service" \
        "$dir/brim-node@n1.service" 2>&1) || grep -q brim <<<"$out"; then
        echo "$out" >&2
        fail "systemd-analyze verify complains about the units"
    fi
    [ -z "$out" ] || echo "systemd-analyze verify, not about brim: $out"
    rm -f "$dir/brim-node@n1.service"
    echo "systemd-analyze verify: brim-coord.service, brim-node@n1.service" \
        "clean"
}

# exec_start UNIT INSTANCE: the unit's ExecStart command, %i replaced.
exec_start() {
    sed -n 's/^ExecStart=//p' "$1" | sed "s/%i/$2/g"
}

# alive PID: runs (a zombie not yet reaped counts as gone)
alive() {
    kill -0 "$1" 2>/dev/null || return 1
    [ "$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]
}

# await_exit PID LIMIT_S: wait up to LIMIT_S for PID (a child of this
# shell) to end; sets st to its exit status, or "running".
await_exit() {
    local pid=$1 limit=$2 i
    for ((i = 0; i < limit * 10; i++)); do
        alive "$pid" || break
        sleep 0.1
    done
    st=running
    if ! alive "$pid"; then
        st=0
        wait "$pid" || st=$?
    fi
}

# cluster UNITDIR CTL ROOT [RUNAS]: start brim-coord and the nodes n1, n2
# with their units' ExecStart (paths under ROOT, as user RUNAS when given),
# on free loopback ports (the command line wins over the config files),
# check a key round trip, then stop the nodes at once and the coordinator.
cluster() {
    local unitdir=$1 ctl=$2 root=$3 runas=${4:-} base coord n i out st
    local -a run=() cmd extra
    if [ -n "$runas" ]; then
        run=(setpriv --reuid="$runas" --regid="$runas" --init-groups)
    fi
    base=$(brim_free_ports 3) || fail "no free ports"
    coord=127.0.0.1:$base
    read -r -a cmd <<<"$(exec_start "$unitdir/brim-coord.service" "")"
    cmd[0]=$root${cmd[0]}
    cmd[2]=$root${cmd[2]}
    extra=(--listen "$coord")
    if [ -n "$root" ]; then
        mkdir -p "$tmp/coord-data"
        extra+=(--data-dir "$tmp/coord-data")
    fi
    (cd / && exec "${run[@]}" "${cmd[@]}" "${extra[@]}") \
        >"$tmp/coord.log" 2>&1 &
    pids+=($!)
    local coord_pid=$!
    echo "started: ${cmd[*]} ${extra[*]}"
    for n in 1 2; do
        read -r -a cmd <<<"$(exec_start "$unitdir/brim-node@.service" "n$n")"
        cmd[0]=$root${cmd[0]}
        cmd[2]=$root${cmd[2]}
        (cd / && exec "${run[@]}" "${cmd[@]}" --coordinator "$coord" \
            --listen "127.0.0.1:$((base + n))") >"$tmp/n$n.log" 2>&1 &
        pids+=($!)
        echo "started: ${cmd[*]} --coordinator $coord" \
            "--listen 127.0.0.1:$((base + n))"
    done
    local n1_pid=${pids[-2]} n2_pid=${pids[-1]}
    # Both nodes listed up by the coordinator (bounded: 20 s).
    for ((i = 0; i < 200; i++)); do
        out=$("$ctl" --coordinator "$coord" nodes 2>/dev/null || true)
        if [ "$(grep -c -E '^n[12] .* up ' <<<"$out")" = 2 ]; then
            break
        fi
        for p in "$coord_pid" "$n1_pid" "$n2_pid"; do
            alive "$p" || {
                tail -n 5 "$tmp"/*.log >&2
                fail "a daemon exited at start"
            }
        done
        sleep 0.1
    done
    [ "$(grep -c -E '^n[12] .* up ' <<<"$out")" = 2 ] || {
        echo "$out" >&2
        tail -n 5 "$tmp"/*.log >&2
        fail "n1 and n2 are not both up after 20 s"
    }
    echo "$out"
    "$ctl" --coordinator "$coord" set deb:key installed >/dev/null ||
        fail "brimctl set through the cluster failed"
    [ "$("$ctl" --coordinator "$coord" get deb:key)" = installed ] ||
        fail "brimctl get did not return the value set"

    # What `systemctl stop 'brim-node@*'` does: the unit's KillSignal
    # (SIGTERM) to every node at once, SIGKILL only after TimeoutStopSec.
    local t_stop=$SECONDS sig
    sig=$(sed -n 's/^KillSignal=SIG//p' "$unitdir/brim-node@.service")
    kill -"${sig:-TERM}" "$n1_pid" "$n2_pid"
    for p in "$n1_pid" "$n2_pid"; do
        await_exit "$p" "$STOP_S"
        [ "$st" = 0 ] || {
            tail -n 8 "$tmp"/*.log >&2
            fail "a node stopped with every node at once: exit $st" \
                "(limit $STOP_S s)"
        }
    done
    echo "SIG${sig:-TERM} to n1 and n2 at once: both exited 0 in" \
        "$((SECONDS - t_stop)) s"
    grep -q "every member is leaving, the cluster stops" "$tmp/coord.log" || {
        cat "$tmp/coord.log" >&2
        fail "the coordinator did not log that every member leaves"
    }
    kill -TERM "$coord_pid"
    await_exit "$coord_pid" 10
    [ "$st" = 0 ] || fail "brim-coord on SIGTERM: exit $st"
    echo "brim-coord on SIGTERM: exit 0"
    pids=()
}

# pc_program CC_ARGS...: build and run a program against libbrim.
pc_program() {
    cat >"$tmp/pc.c" <<'EOC'
#include <stdio.h>
#include <string.h>

#include <brim.h>
#include <brim/admin.h>

int
main(void)
{
    printf("%s\n", brim_err_name(BRIM_ECONNREFUSED));
    return strcmp(brim_node_state_name(BRIM_NODE_UP), "up") != 0;
}
EOC
    cc -o "$tmp/pc" "$tmp/pc.c" "$@" || fail "cc $* failed"
    "$tmp/pc" >/dev/null || fail "the program built with pkg-config failed"
}

# ---- contents: nothing installed ----
if [ "$mode" = contents ]; then
    deps=$(dpkg-deb --field "$deb" Depends)
    echo "Depends: $deps"
    for d in libuv1 libmsgpackc2 libxxhash0 libjansson4 libssl3 libc6 \
        adduser; do
        grep -q -E "(^|, )$d( |,|$)" <<<"$deps" ||
            fail "Depends does not name $d: $deps"
    done
    [ "$(dpkg-deb --field "$deb" Recommends)" = pkg-config ] ||
        fail "the package does not recommend pkg-config"
    root=$tmp/root
    dpkg-deb -x "$deb" "$root"
    lib=$(find "$root/usr/lib" -name 'libbrim.so.*.*' | head -n 1)
    [ -n "$lib" ] || fail "no libbrim.so.X.Y in the package"
    pc=$(find "$root/usr/lib" -name brim.pc | head -n 1)
    [ -n "$pc" ] || fail "no brim.pc in the package"
    for f in usr/bin/brim-node usr/bin/brim-coord usr/bin/brimctl \
        usr/bin/brim-bench usr/bin/brim-sim usr/include/brim.h \
        usr/include/brim/status.h usr/include/brim/admin.h \
        usr/lib/systemd/system/brim-coord.service \
        usr/lib/systemd/system/brim-node@.service etc/brim/coord.conf \
        usr/share/brim/examples/coord.conf \
        usr/share/brim/examples/node.conf; do
        [ -e "$root/$f" ] || fail "/$f is not in the package"
    done
    for b in brim-node brim-coord brimctl brim-bench brim-sim; do
        out=$("$root/usr/bin/$b" --help) || out=""
        grep -q -i usage <<<"$out" ||
            fail "/usr/bin/$b --help from the package gives no usage"
    done
    echo "files: the five binaries (each answers --help)," \
        "${lib#"$root"}, the headers, ${pc#"$root"}, units, configs"

    ctrl=$tmp/ctrl
    dpkg-deb -e "$deb" "$ctrl"
    for s in postinst prerm postrm; do
        [ -x "$ctrl/$s" ] || fail "no executable $s in the package"
        sh -n "$ctrl/$s" || fail "$s does not parse"
    done
    grep -q 'adduser --system' "$ctrl/postinst" ||
        fail "postinst creates no system user"
    grep -q -x /etc/brim/coord.conf "$ctrl/conffiles" ||
        fail "/etc/brim/coord.conf is not a conffile"
    grep -q ldconfig "$ctrl/triggers" || fail "no ldconfig trigger"
    echo "control: postinst, prerm, postrm parse; conffiles; ldconfig"

    units=$root/usr/lib/systemd/system
    for u in brim-coord.service brim-node@.service; do
        read -r -a cmd <<<"$(exec_start "$units/$u" x)"
        [ -x "$root${cmd[0]}" ] ||
            fail "$u: ExecStart ${cmd[0]} is not a binary of the package"
        [ -e "$root${cmd[2]}" ] || [ "$u" != brim-coord.service ] ||
            fail "$u: its config ${cmd[2]} is not in the package"
    done
    grep -q -x 'After=network-online.target brim-coord.service' \
        "$units/brim-node@.service" ||
        fail "brim-node@.service is not ordered after brim-coord.service"
    grep -q -x 'TimeoutStopSec=15min' "$units/brim-node@.service" ||
        fail "brim-node@.service: TimeoutStopSec is not 15min"

    out=$(PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_LIBDIR=/nonexistent \
        pkg-config --cflags --libs brim) || fail "pkg-config brim failed"
    inc=$(sed -n 's/.*-I\([^ ]*\).*/\1/p' <<<"$out")
    libdir=$(sed -n 's/.*-L\([^ ]*\).*/\1/p' <<<"$out")
    if [ "$(realpath "$inc")" != "$root/usr/include" ] ||
        [ "$(realpath "$libdir")" != "$(dirname "$lib")" ]; then
        fail "pkg-config brim gives $out, not the package's directories"
    fi
    echo "pkg-config --cflags --libs brim (extracted): $out"

    # The units' paths, rewritten into the extracted root.
    mkdir "$tmp/units"
    for u in brim-coord.service brim-node@.service; do
        sed "s#=/usr/bin/#=$root/usr/bin/#" "$units/$u" >"$tmp/units/$u"
    done
    verify_units "$tmp/units"

    cp "$root/usr/share/brim/examples/node.conf" "$root/etc/brim/node-n1.conf"
    cp "$root/usr/share/brim/examples/node.conf" "$root/etc/brim/node-n2.conf"
    cluster "$units" "$root/usr/bin/brimctl" "$root"
    echo "PASS: deploy.deb_contents"
    exit 0
fi

# ---- install: dpkg -i on this machine ----
[ "$(id -u)" = 0 ] || fail "BRIM_DEB_INSTALL=1 needs root (dpkg -i)"
if dpkg-query -W -f='${db:Status-Abbrev}' brim 2>/dev/null | grep -q '^.i'; then
    fail "a package brim is installed already; not replacing it"
fi
[ ! -e /usr/bin/brim-node ] || fail "/usr/bin/brim-node exists already"
installed=1
dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1 || {
    cat "$tmp/dpkg.log" >&2
    fail "dpkg -i $(basename "$deb") failed"
}
echo "dpkg -i $(basename "$deb"): installed"

out=$(/usr/bin/brim-node --help) || out=""
grep -q -i usage <<<"$out" || fail "/usr/bin/brim-node --help gives no usage"
echo "/usr/bin/brim-node --help: ${out%%$'\n'*}"
out=$(env -u PKG_CONFIG_PATH pkg-config --cflags --libs brim) ||
    fail "pkg-config --cflags --libs brim failed after install"
echo "pkg-config --cflags --libs brim: $out"
read -r -a flags <<<"$out"
pc_program "${flags[@]}"
echo "a program built with those flags runs (no LD_LIBRARY_PATH)"

uid=$(id -u brim) || fail "no user brim"
[ "$uid" -lt 1000 ] || fail "user brim is not a system user (uid $uid)"
[ "$(stat -c %U /var/lib/brim/coord)" = brim ] ||
    fail "/var/lib/brim/coord is not owned by brim"
echo "user brim (uid $uid) owns /var/lib/brim/coord"

mkdir "$tmp/units"
cp /usr/lib/systemd/system/brim-coord.service \
    /usr/lib/systemd/system/brim-node@.service "$tmp/units/"
verify_units "$tmp/units"

cp /usr/share/brim/examples/node.conf /etc/brim/node-n1.conf
cp /usr/share/brim/examples/node.conf /etc/brim/node-n2.conf
cluster /usr/lib/systemd/system /usr/bin/brimctl "" brim
[ "$(stat -c %U /var/lib/brim/coord/state 2>/dev/null)" = brim ] ||
    fail "brim-coord, run as brim, wrote no /var/lib/brim/coord/state"
echo "/var/lib/brim/coord/state written by user brim"

rm -f /etc/brim/node-n1.conf /etc/brim/node-n2.conf
dpkg --purge brim >"$tmp/purge.log" 2>&1 || {
    cat "$tmp/purge.log" >&2
    fail "dpkg --purge brim failed"
}
installed=0
for f in /usr/bin/brim-node /usr/lib/systemd/system/brim-node@.service \
    /etc/brim /var/lib/brim; do
    [ ! -e "$f" ] || fail "$f is left after dpkg --purge brim"
done
echo "dpkg --purge brim: no file left"
echo "PASS: deploy.deb_install"
