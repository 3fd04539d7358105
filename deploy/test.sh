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
#   BRIM_LINT_FORMAT  off: skip lint.format (exit 77, shown as skipped)
#                     until the tree is clang-formatted (docs/testing.md)
# Exits non-zero on any failure. Works from any directory.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: deploy/test.sh [ctest arguments...]

Build brim and run its tests, from a fresh Debian 12 machine:
  1. install the Debian packages of deploy/packages.txt that are missing
     (as root; as any other user it prints the apt-get command and exits 1);
  2. configure and build build/ (RelWithDebInfo);
  3. run ctest --output-on-failure -j2 with the arguments given, e.g.
       deploy/test.sh -L unit          the unit tests only
       deploy/test.sh -R nemesis       the fault harness's short run

Environment: BRIM_BUILD_DIR (build directory, default build),
BRIM_CMAKE_ARGS (extra cmake arguments), BRIM_CTEST_ARGS (extra ctest
arguments before yours). Exit status: ctest's, or 1 when the packages or
the build fail.
USAGE
}
case "${1:-}" in
-h|--help) usage; exit 0 ;;
esac

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

. "$root/deploy/lib.sh"

step "checking Debian packages (deploy/packages.txt)"
brim_install_packages "$root" || exit 1
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
