#!/usr/bin/env bash
# Ground truth for `twinscale diagnose`: stragglers injected into simulated
# runs (analytic, every rank executed), diagnosed, and counted: precision, recall, steps.
# Usage: experiments/diagnosis/run.sh [OUTDIR]     (~45 min on the shared 2-core machine)
# Writes OUTDIR/gpu-1536.{csv,png} (slow GPUs, 1,536 GPUs, 20 seeds) and
# OUTDIR/host-1536.{csv,png} (slow hosts), OUTDIR/hangs.csv (24 SIGSTOPped CPU ranks, when
# mpirun exists), links.csv and jitter.csv (links_jitter.py; 1536-links.csv and 1536-jitter.csv
# at 1,536 GPUs), spread-1536.{csv,png} (grid.py with a chip spread); FULL=1 adds
# grid-12288.{csv,png} (grid.py: 20 seeds, 2-20 %, 12,288 GPUs), 12288-links.csv and 12288-jitter.csv.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/diagnosis}"
py=/usr/bin/python3
"$py" "$here/study.py" "$out" --kinds gpu --severities 0.02,0.03,0.05,0.10 --counts 1,64 --seeds 20 --steps 1 \
  --gpus 1536 --global-batch 192 --tag gpu-1536
"$py" "$here/study.py" "$out" --kinds host --severities 0.03,0.05 --counts 1,8 --seeds 20 --steps 1 \
  --gpus 1536 --global-batch 192 --tag host-1536
# slow links (link-degraded) and jitter injected by the simulator's fault plans (~10 min)
"$py" "$here/links_jitter.py" "$out"
# the same at 1,536 GPUs: links in flow mode (link counters, no trace), jitter (~3 min)
"$py" "$here/links_jitter.py" "$out" --gpus 1536 --global-batch 192 --link-mode flow --factors 0.5,0.75,0.9 \
  --seeds 10 --what links --tag 1536-
"$py" "$here/links_jitter.py" "$out" --gpus 1536 --global-batch 192 --jitter-delays 0.05,0.08,0.1,0.2 \
  --jitter-seeds 6 --steps 5 --what jitter --tag 1536-
# chip-to-chip spread 1.3 %: the peer detector against the "became slower" one (1,536 GPUs)
"$py" "$here/grid.py" "$out" --gpus 1536 --global-batch 192 --count 8 --seeds 20 --sets-per-run 4 \
  --spread 0.013 --tag spread-1536
if [ "${FULL:-0}" = 1 ]; then
  # the 12,288-GPU grid: 20 seeds x 6 slowdowns x 64 bad GPUs in 5 runs (~5 CPU-min; grid.py says why)
  "$py" "$here/grid.py" "$out" --seeds 20 --sets-per-run 4 --tag grid-12288
  # slow links (flow, ~1.5 min a case) and jitter (~30 s a case) at 12,288 GPUs (~20 min)
  "$py" "$here/links_jitter.py" "$out" --gpus 12288 --global-batch 1536 --link-mode flow --factors 0.5,0.75,0.9 \
    --seeds 3 --what links --tag 12288-
  "$py" "$here/links_jitter.py" "$out" --gpus 12288 --global-batch 1536 --jitter-delays 0.05,0.08,0.1,0.2 \
    --jitter-seeds 3 --steps 5 --what jitter --tag 12288-
fi
if command -v mpirun > /dev/null; then
  "$here/hangs.sh" "$out" 24
fi
