#!/usr/bin/env bash
# Validation against published runs (../shared/reference/validation.md, sections A, B, D,
# E, F: four software stacks on A100 and H100): every row simulated with the stack that ran
# it, predicted vs published with the error of each row, each section's mean and worst.
# Usage: experiments/validation/run.sh [OUTDIR]
# Writes OUTDIR/validation.csv, one OUTDIR/validation-<section>.png per section and
# OUTDIR/raw/*; prints the table. SECTIONS=A,D limits the sections. Analytic mode for
# every row; flow mode (SimGrid, contention) as well for rows of ≤ FLOW_MAX_GPUS GPUs
# (default 512; 0 skips it). Section B rows come from collectives.sh when it exists.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
case "${1:-}" in
  -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "run.sh: unknown option '$1' (usage: experiments/validation/run.sh [OUTDIR]; --help)" >&2; exit 2 ;;
esac
out="${1:-$root/build/experiments/validation}"
mkdir -p "$out"
if [ -x "$here/collectives.sh" ]; then
  rm -f "$out/validation-collectives.csv"
  "$here/collectives.sh" "$out"
fi
exec /usr/bin/python3 "$here/study.py" "$out" --flow-max-gpus "${FLOW_MAX_GPUS:-512}" --sections "${SECTIONS:-A,D,E,F}"
