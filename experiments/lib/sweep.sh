#!/usr/bin/env bash
# Runs one experiment's study file with `twinscale sweep` into OUTDIR/<stem>.db (resumable:
# rerun after an interruption), then `twinscale sweep show` with CSV and plots.
# Usage: experiments/lib/sweep.sh STUDY.toml [OUTDIR]
#   Under MPI: mpirun -np N experiments/lib/sweep.sh … runs the sweep on N ranks (only the
#   sweep itself is launched under mpirun; set TWINSCALE_SWEEP_LAUNCH="mpirun -np 2").
#   Threads: an analytic study's points run on every hardware thread of the one process
#   (`--threads 0`; the store is the one thread's, byte for byte); TWINSCALE_SWEEP_THREADS=1
#   keeps one. A flow-mode study, or one under mpirun, runs one thread per process.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
study="$1"
stem="$(basename "$study" .toml)"
out="${2:-$root/build/experiments/$(basename "$(dirname "$(cd "$(dirname "$study")" && pwd)/x")")}"
cli="${TWINSCALE_CLI:-$root/build/cli/twinscale}"
mkdir -p "$out"
${TWINSCALE_SWEEP_LAUNCH:-} "$cli" sweep "$study" --db "$out/$stem.db" --top 5 --threads "${TWINSCALE_SWEEP_THREADS:-0}" > /dev/null
"$cli" sweep show "$out/$stem.db" --top 10 --csv "$out/$stem.csv" --plot "$out/$stem-plots"
