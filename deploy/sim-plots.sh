#!/usr/bin/env bash
# deploy/sim-plots.sh - regenerate the pictures of docs/simulation.md: run
# brim-sim's grid (Model A) and spread (Model B) with --format json and draw
# them beside the published figures with sim/plot/sim_plots.py.
#
#   deploy/sim-plots.sh [--build-dir DIR] [--out DIR] [--sim FILE] [--quick]
#
# Exit status: 0 both PNGs written, 1 a step failed, 64 bad usage.
set -euo pipefail

PROG="sim-plots.sh"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=deploy/lib.sh
. "$ROOT/deploy/lib.sh"

usage() {
    cat <<'EOF'
usage: deploy/sim-plots.sh [options]

Regenerates docs/img/sim-model-a.png (displaced and churn against eps) and
docs/img/sim-model-b.png (max/mean and relative spread against V): builds
brim-sim when needed, runs the commands below and pipes their JSON to
sim/plot/sim_plots.py (matplotlib). About 20 s on 2 cores; --quick about
3 s.

  brim-sim grid --nodes 200 --keys-per-node 100,1000 --tokens 1,16,160 \
      --eps 0.01,0.02,0.05,0.10,0.25,0.5,1.0 --seeds 24 --rule both \
      --format json --quiet
  brim-sim spread --tokens 1,2,5,10,25,50,100,250,1000 --seeds 400 \
      --format json   (and again with --tokens 1,10,100 --seeds 8)

options:
  --build-dir DIR  build tree holding bin/brim-sim; configured and built
                   (target brim-sim) when needed  [ROOT/build]
  --sim FILE       use this brim-sim binary and build nothing
  --out DIR        where the PNGs go  [ROOT/docs/img]
  --quick          2 seeds for the grid and 50 for spread (for tests; the
                   figures are then noisy and not the published ones)
  -h, --help       this text

The plotting runs under $BRIM_PYTHON, else /usr/bin/python3 (Debian's
python3-matplotlib is installed for that interpreter, not for a pyenv or
venv python3 earlier in PATH), else python3.
EOF
}

die() {
    echo "$PROG: $*" >&2
    exit 1
}

build_dir=$ROOT/build
out_dir=$ROOT/docs/img
sim=
quick=0
while [ $# -gt 0 ]; do
    case $1 in
        --build-dir|--out|--sim)
            [ $# -ge 2 ] || { echo "$PROG: $1 needs a value" >&2; exit 64; }
            case $1 in
                --build-dir) build_dir=$2 ;;
                --out) out_dir=$2 ;;
                --sim) sim=$2 ;;
            esac
            shift 2 ;;
        --quick) quick=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "$PROG: unknown argument \"$1\" (see --help)" >&2; exit 64 ;;
    esac
done

python=${BRIM_PYTHON:-}
if [ -z "$python" ]; then
    python=python3
    [ -x /usr/bin/python3 ] && python=/usr/bin/python3
fi
plot=("$python" "$ROOT/sim/plot/sim_plots.py")

if [ -z "$sim" ]; then
    echo "$PROG: building brim-sim in $build_dir"
    brim_build "$ROOT" "$build_dir" brim-sim || die "building brim-sim failed"
    sim=$build_dir/bin/brim-sim
fi
[ -x "$sim" ] || die "no brim-sim at $sim"
mkdir -p "$out_dir" || die "cannot make $out_dir"

if [ "$quick" -eq 1 ]; then
    grid_seeds=2 spread_seeds=50
else
    grid_seeds=24 spread_seeds=400
fi

start=$SECONDS
echo "$PROG: Model A grid ($grid_seeds seeds) -> $out_dir/sim-model-a.png"
"$sim" grid --nodes 200 --keys-per-node 100,1000 --tokens 1,16,160 \
    --eps 0.01,0.02,0.05,0.10,0.25,0.5,1.0 --seeds "$grid_seeds" \
    --rule both --format json --quiet \
    | "${plot[@]}" grid --out "$out_dir/sim-model-a.png" \
    || die "Model A figure failed"

echo "$PROG: Model B spread ($spread_seeds and 8 seeds)" \
    "-> $out_dir/sim-model-b.png"
{
    "$sim" spread --tokens 1,2,5,10,25,50,100,250,1000 \
        --seeds "$spread_seeds" --format json
    "$sim" spread --tokens 1,10,100 --seeds 8 --format json
} | "${plot[@]}" spread --out "$out_dir/sim-model-b.png" \
    || die "Model B figure failed"
echo "$PROG: done in $((SECONDS - start)) s"
