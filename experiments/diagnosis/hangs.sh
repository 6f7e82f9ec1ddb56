#!/usr/bin/env bash
# Hangs on real CPU ranks (M19): CASES runs of the 8-rank synthetic schedule under mpirun;
# in each, one rank (case mod 8) is stopped with SIGSTOP mid-run; the others time out
# and write their "waiting for" states; `twinscale diagnose RUN_DIR` must name the
# stopped rank first. Writes OUTDIR/hangs.csv (case, victim, named, first finding).
# Usage: experiments/diagnosis/hangs.sh [OUTDIR] [CASES]   (~10 s a case; needs mpirun)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/experiments/diagnosis}"
cases="${2:-24}"
T="${TWINSCALE_CLI:-$root/build/cli/twinscale}"
mkdir -p "$out"
csv="$out/hangs.csv"
echo "case,victim,named,first_kind,first_ranks" > "$csv.tmp"
for ((c = 0; c < cases; ++c)); do
  victim=$((c % 8))
  dir="$out/hang-run"
  rm -rf "$dir"
  mpirun --oversubscribe --allow-run-as-root --enable-recovery -np 8 "$T" run --synthetic 2x2x2 \
    --synthetic-micro-batches 4000 --synthetic-hidden 128 --timeout 2 --run-dir "$dir" > "$out/hang-run.log" 2>&1 &
  job=$!
  for ((i = 0; i < 600; ++i)); do
    n=$( (ls "$dir"/rank-*.started 2>/dev/null || true) | wc -l)
    [ "$n" -eq 8 ] && break
    sleep 0.1
  done
  sleep 0.5
  pid=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pid'])" "$dir/rank-$victim.started")
  kill -STOP "$pid" || echo "case $c: rank $victim ended before the stop" >&2
  for ((i = 0; i < 600; ++i)); do
    n=$( (ls "$dir"/rank-*.json 2>/dev/null || true) | (grep -v "rank-$victim.json" || true) | wc -l)
    [ "$n" -ge 7 ] && break
    sleep 0.1
  done
  kill -KILL "$pid" || true
  wait "$job" || true
  rc=0
  "$T" diagnose "$dir" --json > "$out/hang-diagnosis.json" || rc=$?
  /usr/bin/python3 - "$out/hang-diagnosis.json" "$c" "$victim" "$rc" >> "$csv.tmp" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
case, victim, rc = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
f = d["findings"][0] if d["findings"] else {"kind": "none", "ranks": []}
named = rc == 4 and f["kind"] == "hang" and f["ranks"] == [victim]
print(f"{case},{victim},{'true' if named else 'false'},{f['kind']},{' '.join(map(str, f['ranks']))}")
PY
  tail -1 "$csv.tmp" >&2
done
mv "$csv.tmp" "$csv"
named=$(grep -c ",true," "$csv" || true)
echo "hangs named: $named of $cases ($csv)"
