#!/usr/bin/env bash
# The MoE all-to-all variants that keep traffic inside the NVLink domain.
# For mixtral-8x7b (512 GPUs, EP 8 inside each 8-GPU server) and deepseek-v3-style
# (2,048 GPUs, EP 64 over 8 servers) on h100-400g, each preset as it is (flat all-to-all)
# and with [parallel] ep_a2a = "hierarchical", ep_node = 8 (Tutel 2DH / DeepSpeed-MoE),
# and for deepseek also max_nodes_per_token = 4 (DeepSeek-V3's node-limited routing with
# DeepEP's dispatch): iteration time in analytic and flow mode, the bytes the flow mode put
# on the links of --link-csv (one iteration, every traffic class: GB leaving the servers
# on the NIC → ToR links, GB going above the ToRs, GB on NVLink) and the flow run's CPU
# and wall seconds. deepseek-v3-style runs with --global-batch 256 (2 micro-batches per
# pipeline instead of 120: the same layers and all-to-alls, a flow run of minutes rather
# than an hour on a loaded 2-core machine); mixtral-8x7b as its preset (1,024).
# Usage: experiments/moe_a2a/run.sh [OUTDIR]   → OUTDIR/moe_a2a.csv
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/moe_a2a}"
cli="$root/build/cli/twinscale"
mkdir -p "$out"
variant() { # preset, variant → job file
  local f="$out/$1-$2.toml"
  case "$2" in
  flat) cp "$root/presets/jobs/$1.toml" "$f" ;;
  hierarchical) sed 's/^\[parallel\]$/[parallel]\nep_a2a = "hierarchical"\nep_node = 8/' \
    "$root/presets/jobs/$1.toml" > "$f" ;;
  node-limited) sed 's/^\[parallel\]$/[parallel]\nep_a2a = "hierarchical"\nep_node = 8\nmax_nodes_per_token = 4/' \
    "$root/presets/jobs/$1.toml" > "$f" ;;
  esac
  echo "$f"
}
iteration() { /usr/bin/python3 -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["iteration_time_s"])' "$1"; }
link_gb() { # link CSV → GB up NIC → ToR (leaving servers), GB up above the ToRs, GB on NVLink
  /usr/bin/python3 -c 'import csv,sys
rows = list(csv.DictReader(open(sys.argv[1])))
def gb(kinds, up_only=True):
    return sum(float(r["bytes"]) for r in rows if r["kind"] in kinds and (not up_only or r["direction"] == "up")) / 1e9
print("%.1f,%.1f,%.1f" % (gb({"nic-tor"}), gb({"tor-aggregation", "tor-spine"}), gb({"nvlink"}, False)))' "$1"
}
echo "job,gpus,global_batch,a2a,analytic_s,flow_s,nic_up_gb,above_tor_up_gb,nvlink_gb,flow_cpu_s,flow_wall_s" > "$out/moe_a2a.csv.tmp"
for job in mixtral-8x7b deepseek-v3-style; do
  variants=(flat hierarchical)
  batch=() gb=1024
  [[ "$job" == deepseek-v3-style ]] && variants+=(node-limited) && batch=(--global-batch 256) && gb=256
  for v in "${variants[@]}"; do
    f=$(variant "$job" "$v")
    "$cli" simulate "$f" "${batch[@]}" --mode analytic --json > "$out/$job-$v-analytic.json"
    # CPU seconds of the flow run (the simulator forks its SimGrid child: children counted)
    /usr/bin/time -f "%e %U %S" -o "$out/$job-$v-flow.time" \
      "$cli" simulate "$f" "${batch[@]}" --mode flow --json --link-csv "$out/$job-$v-links.csv" > "$out/$job-$v-flow.json"
    read -r wall user sys < "$out/$job-$v-flow.time"
    cpu=$(/usr/bin/python3 -c 'import sys; print("%.1f" % (float(sys.argv[1]) + float(sys.argv[2])))' "$user" "$sys")
    gpus=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpus"])' "$out/$job-$v-flow.json")
    echo "$job,$gpus,$gb,$v,$(iteration "$out/$job-$v-analytic.json"),$(iteration "$out/$job-$v-flow.json"),$(link_gb "$out/$job-$v-links.csv"),$cpu,$wall" >> "$out/moe_a2a.csv.tmp"
  done
done
mv "$out/moe_a2a.csv.tmp" "$out/moe_a2a.csv"
column -s, -t "$out/moe_a2a.csv"
