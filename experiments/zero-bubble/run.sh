#!/usr/bin/env bash
# ZB-H1 against 1F1B on GPT-175B (12,288 GPUs, tp 8, pp 8, dp 192, 32 micro-batches per
# pipeline), analytic mode: iteration time, MFU and where the time goes, and the bubble
# the paper's formulas predict from the simulated per-micro-batch compute.
# Usage: experiments/zero-bubble/run.sh [OUTDIR]   → OUTDIR/zero_bubble.csv, OUTDIR/*.json
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/zero-bubble}"
cli="${TWINSCALE_CLI:-$root/build/cli/twinscale}"
mkdir -p "$out"
for p in 1f1b zbh1; do
  "$cli" simulate "$here/gpt-175b-$p.toml" --mode analytic --json > "$out/gpt-175b-$p.json"
done
/usr/bin/python3 - "$out" > "$out/zero_bubble.csv.tmp" <<'PY'
import json, sys
out = sys.argv[1]
print("pipeline,iteration_s,mfu,compute_s,exposed_tp_s,exposed_dp_s,bubble_s,idle_s,bubble_plus_idle_s")
for p in ("1f1b", "zbh1"):
    r = json.load(open(f"{out}/gpt-175b-{p}.json"))
    b = r["breakdown"]
    print(f'{p},{r["iteration_time_s"]:.6f},{r["mfu"]:.4f},{b["compute_s"]:.6f},{b["exposed_tp_s"]:.6f},'
          f'{b["exposed_dp_s"]:.6f},{b["bubble_s"]:.6f},{b["idle_s"]:.6f},{b["bubble_s"] + b["idle_s"]:.6f}')
PY
mv "$out/zero_bubble.csv.tmp" "$out/zero_bubble.csv"
cat "$out/zero_bubble.csv"
