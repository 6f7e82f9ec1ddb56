#!/usr/bin/env bash
# Two GPT-1.3B jobs (24 and 32 GPUs) on one tiny-3tier fabric (8 servers, 2 per ToR
# group), placed linear (they meet under ToR group 1), tor-aware (a ToR group each) and
# random (servers scattered, two seeds), each also with DCQCN on: every job's iteration
# time alone and together, its slowdown, and the links they share; then the linear
# study over 4 iterations with job b starting with a (linear-4it) and 0.3 s = two of a's
# iterations later (linear-late).
# Usage: experiments/multi_job/run.sh [OUTDIR]   → OUTDIR/multi_job.csv, OUTDIR/*.json
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/multi_job}"
cli="$root/build/cli/twinscale"
mkdir -p "$out"
csv="$out/multi_job.csv.tmp"
echo "placement,congestion_control,job,gpus,alone_s,together_s,slowdown,shared_link_directions" > "$csv"
for p in linear tor-aware random random-seed2 linear-4it linear-late; do
  for cc in none dcqcn; do
    study="$here/two-jobs-$p.toml"
    if [[ "$cc" != none ]]; then
      # the same study on the DCQCN twin of tiny-3tier: a copy in OUTDIR/studies, next
      # to the files it names (a study may name files of its own folder only)
      mkdir -p "$out/studies"
      cp "$here/gpt-1b.toml" "$here/tiny-3tier-dcqcn.toml" "$out/studies/"
      study="$out/studies/two-jobs-$p-dcqcn.toml"
      sed 's/^cluster = "tiny-3tier"/cluster = "tiny-3tier-dcqcn.toml"/' "$here/two-jobs-$p.toml" > "$study"
    fi
    "$cli" simulate-jobs "$study" --json > "$out/$p-$cc.json"
    /usr/bin/python3 - "$out/$p-$cc.json" "$p" "$cc" >> "$csv" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for j in r["jobs"]:
    print("%s,%s,%s,%d,%.6f,%.6f,%.4f,%d" % (sys.argv[2], sys.argv[3], j["name"], j["gpus"],
          j["iteration_time_alone_s"], j["iteration_time_together_s"], j["slowdown"],
          r["shared_link_directions"]))
PY
  done
done
mv "$csv" "$out/multi_job.csv"
column -s, -t "$out/multi_job.csv"
