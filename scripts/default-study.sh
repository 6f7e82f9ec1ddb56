#!/usr/bin/env bash
# The default study (last step of scripts/bootstrap.sh): GPT-175B in MegaScale's and in
# Megatron-LM's form on 12,288 GPUs of megascale-ampere, global batch 6,144, simulated;
# both result tables side by side. See experiments/default_study/README.md.
# Usage: scripts/default-study.sh [OUTDIR] [flow|analytic]   (default: build/experiments/default_study)
set -euo pipefail
cd "$(dirname "$0")/.."
exec experiments/default_study/run.sh "$@"
