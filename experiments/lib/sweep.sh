#!/usr/bin/env bash
# Runs one experiment's study file with `twinscale sweep` into OUTDIR/<stem>.db (resumable:
# rerun after an interruption), then `twinscale sweep show` with CSV and plots.
# Usage: experiments/lib/sweep.sh STUDY.toml [OUTDIR]
#   Under MPI: mpirun -np N experiments/lib/sweep.sh … runs the sweep on N ranks (only the
#   sweep itself is launched under mpirun; set TWINSCALE_SWEEP_LAUNCH="mpirun -np 2").
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
study="$1"
stem="$(basename "$study" .toml)"
out="${2:-$root/build/experiments/$(basename "$(dirname "$(cd "$(dirname "$study")" && pwd)/x")")}"
cli="${TWINSCALE_CLI:-$root/build/cli/twinscale}"
mkdir -p "$out"
${TWINSCALE_SWEEP_LAUNCH:-} "$cli" sweep "$study" --db "$out/$stem.db" --top 5 > /dev/null
"$cli" sweep show "$out/$stem.db" --top 10 --csv "$out/$stem.csv" --plot "$out/$stem-plots"
