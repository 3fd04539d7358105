#!/usr/bin/env bash
# tests/cluster/install_daemons.sh - cmake --install puts the daemons where
# an operator (and the .deb) looks for them: bin/brim-node, bin/brim-coord
# and bin/brimctl under the prefix, each running --help (issue 12).
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
echo "installed and run from $prefix/bin: brim-node brim-coord brimctl"
