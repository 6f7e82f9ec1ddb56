#!/usr/bin/env bash
# Outside the set: Megatron-Core r0.8.0's published H100 runs (Megatron-LM README,
# f2e5db402c: the model table and the 177B strong-scaling series) and NeMo 24.07's rows
# that are not in section F, and NeMo's long-sequence rows with context parallelism (H100,
# B200), predicted with the megatron-core-0.8 stack, never fitted.
# Usage: experiments/outside_set/run.sh [OUTDIR]   (study.py --help: the options)
# Writes OUTDIR/outside_set.csv, OUTDIR/outside_set.png, OUTDIR/jobs/*, OUTDIR/raw/*;
# prints the table, the strong-scaling slopes and the long-sequence trends. ~100 s on 2
# cores (flow mode at ≤ 512 GPUs).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec "$here/../lib/run_study.sh" outside_set "$@"
