#!/usr/bin/env bash
# Hangs in the simulator, ground truth: CASES seeded cases of JOB on GPUS
# GPUs (analytic mode, every rank executed); in each, a random rank R stops issuing ops at
# a random time T within the iteration (`simulate --hang-rank R --hang-at-s T --run-dir`),
# and `twinscale diagnose RUN_DIR` must name R first. Each case is diagnosed twice:
#  - logged: R wrote its state too (a rank stuck in host code whose watchdog still logs),
#    so R is found only from who waits on it;
#  - silent: R's state file removed (a stopped or dead process, like SIGSTOP on real ranks).
# Writes OUTDIR/sim_hangs.csv (case, rank, at_s, named_logged, named_silent, first ranks).
# Usage: experiments/diagnosis/sim_hangs.sh [OUTDIR] [CASES] [JOB] [GPUS] [SEED]
#        (llama3-70b on 128 GPUs: ~2.5 s a case)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/diagnosis}"
cases="${2:-24}"
job="${3:-$root/presets/jobs/llama3-70b.toml}"
gpus="${4:-128}"
seed="${5:-1}"
T="${TWINSCALE_CLI:-$root/build/cli/twinscale}"
mkdir -p "$out"
sim=("$T" simulate "$job" --gpus "$gpus" --mode analytic --every-rank)
iteration=$("${sim[@]}" --json 2>/dev/null |
  /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['iteration_time_s'])")
# the cases: (rank, time) drawn from SEED, time uniform within the iteration
mapfile -t draws < <(/usr/bin/python3 - "$seed" "$cases" "$gpus" "$iteration" <<'PY'
import random, sys
rng = random.Random(int(sys.argv[1]))
for _ in range(int(sys.argv[2])):
    print(rng.randrange(int(sys.argv[3])), f"{rng.uniform(0, float(sys.argv[4])):.6f}")
PY
)
csv="$out/sim_hangs.csv"
echo "case,rank,at_s,named_logged,named_silent,first_logged,first_silent" > "$csv.tmp"
first() { # rc, diagnosis JSON → "named first-ranks"
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
rc, path, victim = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
d = json.load(open(path))
f = d["findings"][0] if d["findings"] else {"kind": "none", "ranks": []}
named = rc == 4 and f["kind"] == "hang" and f["ranks"] == [victim]
print("true" if named else "false", " ".join(map(str, f["ranks"])) or "-")
PY
}
for ((c = 0; c < cases; ++c)); do
  read -r rank at <<< "${draws[$c]}"
  dir="$out/sim-hang-run"
  rm -rf "$dir"
  # exit 5: the hung job did not complete (its run directory is written); 0 if the hang
  # came after its last op
  rc=0
  "${sim[@]}" --hang-rank "$rank" --hang-at-s "$at" --run-dir "$dir" > /dev/null 2> "$out/sim-hang.log" || rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 5 ] || { cat "$out/sim-hang.log" >&2; exit "$rc"; }
  rc=0
  "$T" diagnose "$dir" --json > "$out/sim-hang-diagnosis.json" || rc=$?
  read -r logged first_logged <<< "$(first "$rc" "$out/sim-hang-diagnosis.json" "$rank")"
  rm -f "$dir/rank-$rank.json"
  rc=0
  "$T" diagnose "$dir" --world "$gpus" --json > "$out/sim-hang-diagnosis.json" || rc=$?
  read -r silent first_silent <<< "$(first "$rc" "$out/sim-hang-diagnosis.json" "$rank")"
  echo "$c,$rank,$at,$logged,$silent,$first_logged,$first_silent" >> "$csv.tmp"
  tail -1 "$csv.tmp" >&2
done
mv "$csv.tmp" "$csv"
logged=$(cut -d, -f4 "$csv" | grep -c true || true)
silent=$(cut -d, -f5 "$csv" | grep -c true || true)
echo "simulated hangs ($(basename "$job") on $gpus GPUs, iteration $iteration s, seed $seed):" \
  "named first $logged of $cases (hung rank logged its state), $silent of $cases (hung rank silent) ($csv)"
