#!/usr/bin/env bash
# Default study: GPT-175B, MegaScale form vs Megatron-LM form, 12,288 GPUs of
# megascale-ampere, global batch 6,144; both result tables side by side.
# Usage: experiments/default_study/run.sh [OUTDIR] [analytic|flow]
# Analytic by default: the flow mode at 12,288 GPUs takes over 10 min on a loaded 2-core
# machine (see README.md); pass "flow" to use it.
# Writes OUTDIR/default_study.{csv,png} and OUTDIR/raw/*.json (one per job).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/default_study}"
mode="${2:-analytic}"
exec /usr/bin/python3 "$here/study.py" "$out" --mode "$mode"
