#!/usr/bin/env bash
# FP8 GEMMs and a rail-only fabric on Llama 3.
#  1. llama3-70b (2,048 GPUs) and llama3-405b (16,384 GPUs) on h100-400g, analytic mode,
#     BF16 vs FP8 GEMMs (the preset plus [precision] gemm = "fp8"): iteration time, MFU
#     (against the BF16 peak, as Meta and Megatron report it) and the FP8 speed-up.
#  2. llama3-70b (2,048 GPUs) and llama3-405b (16,384 GPUs, about 90 s each) in flow mode
#     on the Clos fabric h100-400g and on h100-rail-only.
# Usage: experiments/fp8_rail/run.sh [OUTDIR]   → OUTDIR/fp8.csv, OUTDIR/rail.csv
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/fp8_rail}"
cli="$root/build/cli/twinscale"
mkdir -p "$out"
row() { # json file → iteration_s,mfu,tflops_per_gpu
  /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.4f,%.4f,%.1f" % (d["iteration_time_s"], d["mfu"], d["tflops_per_gpu"]))' "$1"
}
echo "job,gpus,gemm,iteration_s,mfu,tflops_per_gpu" > "$out/fp8.csv.tmp"
for job in llama3-70b llama3-405b; do
  sed 's/^cluster = .*/cluster = "h100-400g"/' "$root/presets/jobs/$job.toml" > "$out/$job-bf16.toml"
  { cat "$out/$job-bf16.toml"; printf '\n[precision]\ngemm = "fp8"\n'; } > "$out/$job-fp8.toml"
  for gemm in bf16 fp8; do
    # the FP8 weight copies fit: llama3-405b's worst stage 67.9 GB of 85.5 (schedule memory)
    "$cli" simulate "$out/$job-$gemm.toml" --mode analytic --json > "$out/$job-$gemm.json"
    gpus=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpus"])' "$out/$job-$gemm.json")
    echo "$job,$gpus,$gemm,$(row "$out/$job-$gemm.json")" >> "$out/fp8.csv.tmp"
  done
done
mv "$out/fp8.csv.tmp" "$out/fp8.csv"
column -s, -t "$out/fp8.csv"
echo
echo "job,cluster,iteration_s,mfu,tflops_per_gpu,wall_s" > "$out/rail.csv.tmp"
for job in llama3-70b llama3-405b; do
  for cluster in h100-400g h100-rail-only; do
    start=$(date +%s.%N)
    "$cli" simulate --preset "$job" --cluster "$cluster" --mode flow --json > "$out/rail-$job-$cluster.json"
    wall=$(/usr/bin/python3 -c 'import sys, time; print("%.1f" % (time.time() - float(sys.argv[1])))' "$start")
    echo "$job,$cluster,$(row "$out/rail-$job-$cluster.json"),$wall" >> "$out/rail.csv.tmp"
  done
done
mv "$out/rail.csv.tmp" "$out/rail.csv"
column -s, -t "$out/rail.csv"
