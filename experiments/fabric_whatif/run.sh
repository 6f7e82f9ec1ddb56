#!/usr/bin/env bash
# Fabric what-ifs on GPT-175B (MegaScale form), 1,024 GPUs, global batch 768: 1:1 vs 2:1
# ToR oversubscription, 8 vs 4 rails vs single-rail, placement linear / tor-aware / random,
# each with overlaps on and off; flow mode and analytic mode.
# Then the same in flow mode at 3,072 GPUs (global batch 1,536: 6 ToR groups per rail).
# Usage: experiments/fabric_whatif/run.sh [OUTDIR]
# Writes OUTDIR/fabric_whatif.{csv,png}, OUTDIR/raw/*.json (1,024 GPUs) and the same under
# OUTDIR/gpus-3072/; prints the tables.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/fabric_whatif}"
/usr/bin/python3 "$here/study.py" "$out"
/usr/bin/python3 "$here/study.py" "$out/gpus-3072" --gpus 3072 --global-batch 1536 --modes flow
