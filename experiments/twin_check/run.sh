#!/usr/bin/env bash
# The twin loop on this machine, closed on a configuration nobody measured:
#   probe configuration A (twinscale probe under mpirun) → simulate configuration B (another
#   pipeline/data-parallel split and micro-batch count) with the probe's calibration table and
#   cluster → run B for real (CPU device) → compare, per op kind and for the iteration.
# Three repetitions per rank count; the medians are reported. 8 ranks oversubscribe a
# 2-core machine (reported, flagged in the CSV).
# Usage: experiments/twin_check/run.sh [OUTDIR] [RANKS...]   (default ranks: 2 4 8)
# Writes OUTDIR/twin_check.{csv,png}, OUTDIR/raw/*; prints the summary table.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/twin_check}"
shift || true
exec /usr/bin/python3 "$here/study.py" "$out" --ranks "${*:-2 4 8}" --repetitions "${REPETITIONS:-3}"
