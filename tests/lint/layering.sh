#!/bin/sh
# tests/lint/layering.sh - the include rules of STYLE.md section 1, checked
# on every #include line (quoted or angled) of the C sources:
#   common/  common only, plus <brim/status.h>; no libuv, no msgpack
#   proto/   common + proto + msgpack; no libuv, no server/ or client/
#   server/  common + proto + server + libuv + msgpack; never client/
#   client/  common + proto + client + libuv + msgpack; never server/
#   sim/     common + sim only
# <brim/status.h> is the one sanctioned upward include; <brim.h> and any
# other <brim/...> header belong to client/. A "../" path is refused
# everywhere: includes are relative to the repository root.
#
# Usage: layering.sh [ROOT]   (ROOT defaults to the current directory)
# Prints one line per violation; exits 1 if there is any, 0 otherwise.
set -u

root=${1:-.}
if [ ! -d "$root/common" ]; then
    echo "layering: $root has no common/ directory" >&2
    exit 2
fi

status=0
checked=0
for area in common proto server client sim; do
    [ -d "$root/$area" ] || continue
    files=$(find "$root/$area" -type f \( -name '*.c' -o -name '*.h' \) \
            | LC_ALL=C sort)
    [ -n "$files" ] || continue
    checked=$((checked + $(printf '%s\n' "$files" | wc -l)))
    if ! printf '%s\n' "$files" | tr '\n' '\0' | xargs -0 awk -v area="$area" '
        function classify(p) {
            if (p ~ /(^|\/)\.\.(\/|$)/)        return "up"
            if (p == "brim/status.h")          return "status"
            if (p == "brim.h" || p ~ /^brim\//) return "client"
            if (p ~ /^(common|proto|server|client|sim|tests|deploy)\//) {
                return substr(p, 1, index(p, "/") - 1)
            }
            if (p == "uv.h" || p ~ /^uv\//)     return "libuv"
            if (p == "msgpack.h" || p ~ /^msgpack\//) return "msgpack"
            return "other"
        }
        function allowed(a, t) {
            if (t == "other" || t == "status" || t == a || t == "common") {
                return 1
            }
            if (a == "proto")  return t == "msgpack"
            if (a == "server") return t == "proto" || t == "libuv" \
                                      || t == "msgpack"
            if (a == "client") return t == "proto" || t == "libuv" \
                                      || t == "msgpack"
            return 0
        }
        /^[ \t]*#[ \t]*include[ \t]*[<"]/ {
            s = $0
            sub(/^[ \t]*#[ \t]*include[ \t]*/, "", s)
            open = substr(s, 1, 1)
            shut = open == "<" ? ">" : "\""
            s = substr(s, 2)
            i = index(s, shut)
            if (i == 0) {
                next
            }
            p = substr(s, 1, i - 1)
            t = classify(p)
            if (!allowed(area, t)) {
                why = t == "up" ? "a \"..\" path" : t "/"
                if (t == "libuv" || t == "msgpack") {
                    why = t
                }
                printf "%s:%d: %s/ must not include %s%s%s (%s)\n", \
                       FILENAME, FNR, area, open, p, shut, why
                bad++
            }
        }
        END { exit bad > 0 }
    '; then
        status=1
    fi
done

if [ "$status" -ne 0 ]; then
    echo "layering: include rules broken (see STYLE.md section 1)" >&2
else
    echo "layering: $checked files checked, no violations"
fi
exit "$status"
