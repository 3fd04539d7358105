#!/usr/bin/env bash
# tests/cluster/client_exports.sh - libbrim.so must export exactly the
# functions its public headers declare with BRIM_EXTERN: nothing of
# brim_common or brim_proto leaks, and nothing public is missing from
# client/lib/libbrim.map.
#
#   client_exports.sh LIBBRIM_SO HEADER...
#
# HEADER: every installed header (client/include/brim.h, the others of
# client/include/brim/, and include/brim/status.h).
set -euo pipefail
lib=${1:?usage: client_exports.sh LIBBRIM_SO HEADER...}
shift
[ $# -gt 0 ] || { echo "usage: client_exports.sh LIBBRIM_SO HEADER..."; exit 2; }

# Every declaration starts a line with BRIM_EXTERN and names its function
# on that line.
declared=$(grep -h '^BRIM_EXTERN ' "$@" \
    | sed -E 's/^([^(]*[ *])([A-Za-z_0-9]+)\(.*/\2/' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWiDBR]$/ { print $3 }' \
    | sed 's/@.*//' | sort -u)
if [ "$declared" != "$exported" ]; then
    echo "declared in the headers but not exported:"
    comm -23 <(echo "$declared") <(echo "$exported") | sed 's/^/  /'
    echo "exported but not declared:"
    comm -13 <(echo "$declared") <(echo "$exported") | sed 's/^/  /'
    exit 1
fi
echo "libbrim exports the $(echo "$declared" | wc -l) public functions, no more"
