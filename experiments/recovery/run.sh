#!/usr/bin/env bash
# ETTR over 28 days of GPT-175B on 12,288 GPUs under the llama3-405b fault model:
# recovery megascale vs megatron-baseline, iteration time from the simulator.
# Usage: experiments/recovery/run.sh [OUTDIR] [flow|analytic]   (simulator mode; flow ~25 s per job)
# Writes OUTDIR/recovery.{csv,png}, OUTDIR/raw/*.json and, per case, the campaign's own
# JSON, CSVs and plot under OUTDIR/<job>-<recovery>/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/recovery}"
exec /usr/bin/python3 "$here/study.py" "$out" --sim-mode "${2:-flow}"
