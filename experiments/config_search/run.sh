#!/usr/bin/env bash
# The best GPT-175B configuration at 12,288 GPUs on megascale-ampere, found by a study:
# every TP × PP × VPP × micro-batch × recomputation layout in analytic mode, the best 3
# again in flow mode (best.toml); then `twinscale sweep show` (best points, Pareto front,
# CSV, PNG). Resumable: rerun after an interruption and only the missing points run.
# Usage: experiments/config_search/run.sh [OUTDIR]      (MPI: TWINSCALE_SWEEP_LAUNCH="mpirun -np 2")
# Throughput benchmark (README): twinscale sweep experiments/config_search/random-1000.toml
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/config_search}"
exec "$here/../lib/sweep.sh" "$here/best.toml" "$out"
