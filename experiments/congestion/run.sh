#!/usr/bin/env bash
# Congestion control in the fluid model and at 12,288 GPUs (docs/congestion.md).
#  1. bench_congestion: N:1 incast (N = 2..16), the PFC victim, a PFC storm and a flow
#     joining a running one, for none / DCQCN / Swift / hybrid, next to the fluid
#     analyses' predictions (cases.csv, join.csv);
#  2. the default study (GPT-175B MegaScale form, 12,288 GPUs, flow mode) with each
#     controller (bench_sim --cluster megascale-ampere-<cc>.toml): iteration time, MFU,
#     wall time and peak memory of the run (default_study.csv);
#  3. congestion.png: the join, the incast queues, the 12,288-GPU iteration times.
# Usage: experiments/congestion/run.sh [OUTDIR] [--quick]   (--quick: 1,024 GPUs in step 2)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/congestion}"
gpus=12288
[[ "${2:-}" == "--quick" ]] && gpus=1024
mkdir -p "$out"
bench="$root/build/bench"
"$bench/bench_congestion" megascale-ampere "$out" | tee "$out/bench_congestion.txt"

csv="$out/default_study.csv.tmp"
echo "controller,gpus,iteration_time_s,mfu,flows,wall_s,child_peak_rss_mib" > "$csv"
for cc in none dcqcn swift hybrid; do
  cluster="megascale-ampere"
  [[ "$cc" != none ]] && cluster="$here/megascale-ampere-$cc.toml"
  log="$out/bench_sim-$cc.txt"
  "$bench/bench_sim" --gpus "$gpus" --mode flow --cluster "$cluster" > "$log"
  get() { awk -v k="sim.${gpus}gpus.flow.$1" '$2 == k {print $3}' "$log"; }
  echo "$cc,$gpus,$(get iteration_time),$(get mfu),$(get flows),$(get wall),$(get child_peak_rss)" >> "$csv"
done
mv "$csv" "$out/default_study.csv"
column -s, -t "$out/default_study.csv"
/usr/bin/python3 "$here/plot.py" "$out"
