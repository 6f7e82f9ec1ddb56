#!/usr/bin/env bash
# The default study. Until the simulator lands: the schedule of GPT-175B in MegaScale's
# form on 12,288 GPUs.
set -euo pipefail
cd "$(dirname "$0")/.."
build/cli/twinscale schedule show --preset gpt-175b-megascale --gpus 12288 --global-batch 6144
