#!/usr/bin/env bash
# Fabric what-ifs on GPT-175B (MegaScale form), 1,024 GPUs, global batch 768: 1:1 vs 2:1
# ToR oversubscription, 8 vs 4 rails vs single-rail, placement linear / tor-aware / random,
# each with overlaps on and off; flow mode and analytic mode.
# Usage: experiments/fabric_whatif/run.sh [OUTDIR]
# Writes OUTDIR/fabric_whatif.{csv,png} and OUTDIR/raw/*.json; prints the table.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/fabric_whatif}"
exec /usr/bin/python3 "$here/study.py" "$out"
