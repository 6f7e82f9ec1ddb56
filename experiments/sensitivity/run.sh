#!/usr/bin/env bash
# Sensitivity: each ranged micro-level fact of the catalogue (A100/H100 sustained clock,
# GEMM efficiency, FlashAttention-2 forward, NVLink and NIC efficiency) at both ends of its
# sources' range, one at a time and all together, on four published full-scale runs
# (GPT-175B at 12,288 A100 in both forms, Nemotron-4 340B at 6,144 H100, Llama 3 405B at
# 16,384 H100): how much of each run's error lies within the facts' uncertainty.
# Usage: experiments/sensitivity/run.sh [OUTDIR]   (study.py --help: the options)
# Writes OUTDIR/sensitivity.csv, OUTDIR/sensitivity.png, OUTDIR/clusters/*, OUTDIR/raw/*;
# prints one table per run. ~5 s on 2 cores (analytic mode).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec "$here/../lib/run_study.sh" sensitivity "$@"
