#!/usr/bin/env bash
# Strong scaling of GPT-175B (MegaScale vs Megatron-LM form), 256 … 12,288 GPUs.
# Usage: experiments/strong_scaling/run.sh [OUTDIR]
# Writes OUTDIR/strong_scaling.{csv,png} and OUTDIR/raw/*.json; prints the table.
# Analytic mode at every size, also with per-GPU speed variation (--speed-variation, as the
# validation experiment runs); flow mode (SimGrid, contention) up to FLOW_MAX_GPUS
# (default 12288: every size, ~5 min in all; FLOW_MAX_GPUS=1024 ~1.5 min; 0 skips it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/strong_scaling}"
flow_max="${FLOW_MAX_GPUS:-12288}"
modes=analytic,variation
[ "$flow_max" -gt 0 ] && modes=analytic,variation,flow
exec /usr/bin/python3 "$here/study.py" "$out" --modes "$modes" --flow-max-gpus "$flow_max" --paper
