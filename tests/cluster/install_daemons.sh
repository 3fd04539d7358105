#!/usr/bin/env bash
# tests/cluster/install_daemons.sh - cmake --install puts the daemons where
# an operator (and the .deb) looks for them: bin/brim-node, bin/brim-coord
# and bin/brimctl under the prefix, each running --help (issue 12); the
# systemd units and config files, written for that prefix (issue 16).
#
#   install_daemons.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: install_daemons.sh BUILD_DIR}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >"$prefix/install.log"
for b in brim-node brim-coord brimctl; do
    if [ ! -x "$prefix/bin/$b" ]; then
        echo "FAIL: cmake --install did not install bin/$b" >&2
        sed 's/^/  /' "$prefix/install.log" >&2
        exit 1
    fi
    "$prefix/bin/$b" --help >/dev/null || {
        echo "FAIL: $prefix/bin/$b --help exited $?" >&2
        exit 1
    }
done
# The units and config files (deploy/install.cmake) are written for the
# prefix: its bin/, etc/brim and var/lib/brim, never /usr's or /etc.
want="ExecStart=$prefix/bin/brim-node --config $prefix/etc/brim/node-%i.conf --name %i"
grep -q -x -F "$want" "$prefix/lib/systemd/system/brim-node@.service" || {
    echo "FAIL: brim-node@.service under $prefix lacks: $want" >&2
    exit 1
}
want="ExecStart=$prefix/bin/brim-coord --config $prefix/etc/brim/coord.conf"
grep -q -x -F "$want" "$prefix/lib/systemd/system/brim-coord.service" || {
    echo "FAIL: brim-coord.service under $prefix lacks: $want" >&2
    exit 1
}
for f in etc/brim/coord.conf share/brim/examples/coord.conf; do
    grep -q -x -F "data-dir $prefix/var/lib/brim/coord" "$prefix/$f" || {
        echo "FAIL: $prefix/$f: data-dir is not under the prefix" >&2
        exit 1
    }
done
[ -f "$prefix/share/brim/examples/node.conf" ] || {
    echo "FAIL: no share/brim/examples/node.conf under $prefix" >&2
    exit 1
}
echo "installed and run from $prefix/bin: brim-node brim-coord brimctl;" \
    "units and configs name $prefix"
