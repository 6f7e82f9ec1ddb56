#!/usr/bin/env bash
# Default study: GPT-175B, MegaScale form vs Megatron-LM form, 12,288 GPUs of
# megascale-ampere, global batch 6,144; both result tables side by side.
# Usage: experiments/default_study/run.sh [OUTDIR] [flow|analytic]
# Flow mode (SimGrid) by default: ~25 s per job at 12,288 GPUs; "analytic" takes ~3 s.
# Writes OUTDIR/default_study.{csv,png} and OUTDIR/raw/*.json (one per job).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/default_study}"
mode="${2:-flow}"
exec /usr/bin/python3 "$here/study.py" "$out" --mode "$mode"
