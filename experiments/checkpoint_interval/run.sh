#!/usr/bin/env bash
# Checkpoint interval for GPT-175B (MegaScale form) on 12,288 GPUs: the simulated optimum
# of ETTR against Young's and Daly's formulas, under
#   (a) an exponential fault model with the Llama 3 total rate (Daly's assumptions hold),
#   (b) the full llama3-405b model (silent corruption, missed diagnoses, stragglers…),
# each with the megascale recovery preset, and (c) the full model with megatron-baseline.
# Writes, per case, DIR/<case>/tune_checkpoint.{csv,json} and ettr_vs_interval.png
# (when matplotlib is installed), and prints the three tables.
#
# Usage: experiments/checkpoint_interval/run.sh [OUT_DIR] [ITERATION_TIME_S]
# The iteration time defaults to the simulator's (analytic mode, once per case);
# ITERATION_TIME_S overrides it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/checkpoint_interval}"
iter="${2:-}"
cli="$root/build/cli/twinscale"
[ -x "$cli" ] || { echo "build first: cmake --build build --target twinscale" >&2; exit 1; }
mkdir -p "$out"
common=(--preset gpt-175b-megascale --days 28 --seeds 20 --points 15)
[ -n "$iter" ] && common+=(--iteration-time "$iter")
echo "== (a) exponential model, megascale recovery"
"$cli" tune-checkpoint "${common[@]}" --faults "$here/exponential-equivalent.toml" --recovery megascale \
  --out "$out/exponential-megascale"
echo "== (b) llama3-405b model, megascale recovery"
"$cli" tune-checkpoint "${common[@]}" --faults llama3-405b --recovery megascale --out "$out/llama3-megascale"
echo "== (c) llama3-405b model, megatron-baseline recovery (synchronous checkpoints)"
"$cli" tune-checkpoint "${common[@]}" --faults llama3-405b --recovery megatron-baseline \
  --out "$out/llama3-baseline"
