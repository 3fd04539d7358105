#!/usr/bin/env bash
# deploy/test.sh - build brim and run its tests, from a fresh Debian 12.
#
#   ./deploy/test.sh [ctest args...]        e.g. ./deploy/test.sh -L unit
#
# 1. Installs the Debian packages in deploy/packages.txt that are missing
#    (as root; otherwise prints the apt-get command and exits 1).
# 2. Configures and builds the tree in build/ (RelWithDebInfo).
# 3. Runs ctest --output-on-failure -j2; fails if no test is found.
#
# Environment:
#   BRIM_BUILD_DIR    build directory (default build; relative to the repo root)
#   BRIM_CMAKE_ARGS   extra cmake arguments, split on spaces
#                     (e.g. "-DBRIM_ASAN=ON -DBRIM_DEBUG=ON")
#   BRIM_CTEST_ARGS   extra ctest arguments, split on spaces, before the
#                     script's own arguments (e.g. "-L unit")
# Exits non-zero on any failure. Works from any directory.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

build_dir=${BRIM_BUILD_DIR:-build}
read -r -a cmake_extra <<< "${BRIM_CMAKE_ARGS:-}"
read -r -a ctest_extra <<< "${BRIM_CTEST_ARGS:-}"

step_start=0
step() {
    step_start=$SECONDS
    printf '\n==> %s\n' "$*"
}
step_done() {
    printf '==> done in %ds\n' "$((SECONDS - step_start))"
}

# The package list lives in one place, deploy/packages.txt.
missing_packages() {
    local pkg status
    while read -r pkg; do
        pkg=${pkg%%#*}
        pkg=${pkg//[[:space:]]/}
        [ -n "$pkg" ] || continue
        status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null \
                 || true)
        if [ "${status:0:2}" != "ii" ]; then
            printf '%s\n' "$pkg"
        fi
    done < deploy/packages.txt
}

step "checking Debian packages (deploy/packages.txt)"
[ -r deploy/packages.txt ] || { echo "deploy/packages.txt missing" >&2; exit 1; }
if ! command -v dpkg-query > /dev/null 2>&1; then
    echo "dpkg-query not found: not Debian; skipping the package check" \
         "(install the equivalents of deploy/packages.txt yourself)"
else
    mapfile -t missing < <(missing_packages)
    if [ "${#missing[@]}" -eq 0 ]; then
        echo "all present"
    elif [ "$(id -u)" -ne 0 ]; then
        echo "missing: ${missing[*]}"
        echo "run as root, or install them first:"
        echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive" \
             "apt-get install -y --no-install-recommends ${missing[*]}"
        exit 1
    else
        echo "installing: ${missing[*]}"
        apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y \
            --no-install-recommends "${missing[@]}"
    fi
fi
step_done

step "configuring $build_dir/ ${cmake_extra[*]}"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cmake_extra[@]}"
step_done

jobs=$(nproc 2> /dev/null || echo 2)
step "building $build_dir/ (-j$jobs)"
cmake --build "$build_dir" -j "$jobs"
step_done

step "testing $build_dir/ ${ctest_extra[*]} $*"
ctest --test-dir "$build_dir" --output-on-failure -j2 --no-tests=error \
    "${ctest_extra[@]}" "$@"
step_done
