#!/usr/bin/env bash
# Ground truth for `twinscale diagnose` (issue #14): stragglers injected into simulated
# runs (analytic, every rank executed), diagnosed, and counted: precision, recall, steps.
# Usage: experiments/diagnosis/run.sh [OUTDIR]     (~25 min on the shared 2-core machine)
# Writes OUTDIR/gpu-1536.{csv,png} (slow GPUs, 1,536 GPUs, 20 seeds) and
# OUTDIR/host-1536.{csv,png} (slow hosts), OUTDIR/hangs.csv (24 SIGSTOPped CPU ranks, when
# mpirun exists); FULL=1 adds 12,288-GPU cases (3 % and 5 %, 64 bad GPUs, 2 seeds).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/diagnosis}"
py=/usr/bin/python3
"$py" "$here/study.py" "$out" --kinds gpu --severities 0.02,0.03,0.05,0.10 --counts 1,64 --seeds 20 --steps 1 \
  --gpus 1536 --global-batch 192 --tag gpu-1536
"$py" "$here/study.py" "$out" --kinds host --severities 0.03,0.05 --counts 1,8 --seeds 20 --steps 1 \
  --gpus 1536 --global-batch 192 --tag host-1536
if [ "${FULL:-0}" = 1 ]; then
  "$py" "$here/study.py" "$out" --kinds gpu --severities 0.03,0.05 --counts 64 --seeds 2 --steps 1 \
    --gpus 12288 --global-batch 1536 --tag gpu-12288
fi
if command -v mpirun > /dev/null; then
  "$here/hangs.sh" "$out" 24
fi
