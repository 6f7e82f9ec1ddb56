#!/usr/bin/env bash
# Runs every experiment's tooling on tiny presets (seconds, not minutes) and checks that
# each writes its CSV and PNG, and that a second run gives byte-identical CSVs.
# Usage: experiments/lib/tiny_check.sh TWINSCALE_CLI OUTDIR   (ctest: experiments_tiny)
set -euo pipefail
export TWINSCALE_CLI="$1"
out="$2"
here="$(cd "$(dirname "$0")/.." && pwd)"
py=/usr/bin/python3
rm -rf "$out"
for pass in 1 2; do
  d="$out/$pass"
  "$py" "$here/default_study/study.py" "$d/default_study" --mode analytic --gpus 8 --global-batch 8 \
    --presets tiny-megascale,tiny-1f1b --cluster tiny-2tier
  "$py" "$here/strong_scaling/study.py" "$d/strong_scaling" --modes analytic,flow --gpus 8,16 \
    --presets tiny-megascale,tiny-1f1b --cluster tiny-2tier --small-batch 8 --large-batch 16 --large-from 16 --paper
  "$py" "$here/fabric_whatif/study.py" "$d/fabric_whatif" --gpus 16 --global-batch 16 --modes flow,analytic \
    --job-on preset:tiny-megascale --job-off preset:tiny-1f1b
  "$py" "$here/recovery/study.py" "$d/recovery" --gpus 8 --global-batch 8 --days 1 --seeds 2 \
    --cases tiny-megascale:megascale,tiny-megascale:megatron-baseline
  "$py" "$here/validation/study.py" "$d/validation" --sections A --rows 1.7B,3.6B --flow-max-gpus 0
  "$py" "$here/outside_set/study.py" "$d/outside_set" --rows 1.7B --sizes 96,2304 --vpps 16 --flow-max-gpus 64 \
    --long-max-gpus 8 --mbs 1,2
  "$py" "$here/sensitivity/study.py" "$d/sensitivity" --jobs gpt175b-megascale --facts sustained_clock_ratio
  "$py" "$here/diagnosis/study.py" "$d/diagnosis" --preset tiny-1f1b --cluster tiny-2tier --gpus 64 \
    --global-batch 64 --kinds gpu,host --severities 0.05 --counts 1 --seeds 2 --steps 2
done
status=0
# refuses STUDY CASE...: each bad option CASE of STUDY/study.py is refused with a message
# naming what is valid, and nothing is written
refuses() {
  local study="$1" bad
  shift
  for bad in "$@"; do
    # shellcheck disable=SC2086  # each case is several words on purpose
    if "$py" "$here/$study/study.py" "$out/bad-$study" $bad 2> "$out/bad.err"; then
      echo "$study: '$bad' was accepted" >&2; status=1
    elif ! grep -q "valid" "$out/bad.err"; then
      echo "$study: '$bad' gave no valid values: $(cat "$out/bad.err")" >&2; status=1
    fi
  done
  [ ! -e "$out/bad-$study" ] || { echo "$study: a refused run wrote its output" >&2; status=1; }
}
# lib/sweep.sh (a study file → store, CSV, plots): on every hardware thread by default, the
# rows of one thread
"$here/lib/sweep.sh" "$here/../examples/study.toml" "$out/sweep-threads" > /dev/null
TWINSCALE_SWEEP_THREADS=1 "$here/lib/sweep.sh" "$here/../examples/study.toml" "$out/sweep-one" > /dev/null
cmp "$out/sweep-threads/study.csv" "$out/sweep-one/study.csv" ||
  { echo "lib/sweep.sh: the threaded study's CSV differs from one thread's" >&2; status=1; }
[ -s "$out/sweep-threads/study-plots/sweep_pareto.png" ] || { echo "lib/sweep.sh: no plot" >&2; status=1; }
refuses outside_set "--rows 999B" "--sizes 97" "--vpps 0" "--long-max-gpus -1" "--mbs 0"
refuses sensitivity "--jobs gpt-175b" "--facts clock"
# the estimated parameters' scans refuse a value outside their bounds and an unknown GPU
for bad in "--gpu H100 --values 0.8" "--gpu B200"; do
  # shellcheck disable=SC2086  # each case is several words on purpose
  if "$py" "$here/validation/estimate.py" "$out/bad-estimate" $bad 2> "$out/bad.err" ||
    ! grep -q "bounds\|invalid choice" "$out/bad.err"; then
    echo "estimate.py: '$bad' gave no clear error: $(cat "$out/bad.err")" >&2; status=1
  fi
done
[ ! -e "$out/bad-estimate" ] || { echo "estimate.py: a refused scan wrote its output" >&2; status=1; }
# an OUTDIR that is a file: a clear error, the file untouched
printf 'not a directory\n' > "$out/a-file"
for study in outside_set sensitivity; do
  if "$py" "$here/$study/study.py" "$out/a-file" 2> "$out/bad.err" ||
    ! grep -q "is not a directory" "$out/bad.err"; then
    echo "$study: an OUTDIR that is a file gave no clear error: $(cat "$out/bad.err")" >&2; status=1
  fi
done
[ "$(cat "$out/a-file")" = "not a directory" ] || { echo "a study changed the file given as OUTDIR" >&2; status=1; }
for e in default_study strong_scaling fabric_whatif recovery validation outside_set sensitivity diagnosis; do
  for f in "$out/1/$e/$e.csv" "$out/1/$e/$e.png"; do
    [ -s "$f" ] || { echo "missing or empty: $f" >&2; status=1; }
  done
  cmp "$out/1/$e/$e.csv" "$out/2/$e/$e.csv" || { echo "$e: CSV differs between two runs" >&2; status=1; }
  rows=$(($(wc -l < "$out/1/$e/$e.csv") - 1))
  [ "$rows" -ge 2 ] || { echo "$e: only $rows rows" >&2; status=1; }
done
exit $status
