#!/usr/bin/env bash
# Bad options of a benchmark are clear errors, not crashes: bench_every_rank names the
# option, the value and what would be valid, and exits 2 (usage) or 1 (a bad value found
# while setting up), never by an uncaught exception or a signal.
set -uo pipefail
bench="$1"
status=0
check() { # expected exit, expected text, arguments...
  local want="$1" text="$2"
  shift 2
  local out rc
  out=$("$bench" "$@" 2>&1)
  rc=$?
  if [ "$rc" != "$want" ] || ! grep -qF -- "$text" <<<"$out"; then
    echo "bench_every_rank $*: exit $rc (want $want), output:" >&2
    echo "$out" | head -3 >&2
    status=1
  fi
}
check 2 "--hang-rank 'x': a rank >= 0" --hang-rank x
check 2 "--hang-rank '5x'" --hang-rank 5x
check 2 "--hang-at-s 'inf': a finite number" --hang-at-s inf
check 2 "--hang-at-s '-1'" --hang-at-s -1
check 2 "--gpus '0': a whole number of GPUs > 0" --gpus 0
check 2 "--seed '-3'" --seed -3
check 2 "--slow-gpus 'many'" --slow-gpus many
check 2 "--mode 'x': analytic, flow or both" --mode x
check 2 "--hang-rank needs --mode analytic" --hang-rank 1 --mode flow
check 2 "--hang-rank 99999: the job has ranks 0..63" --hang-rank 99999 --gpus 64 --no-reference
check 2 "--slow-gpus 999: the fabric has 8 servers" --slow-gpus 999 --gpus 64 --no-reference
check 1 "--gpu-speed-dist 'bogus:1' is not a distribution" --dist bogus:1 --gpus 64 --no-reference
check 1 "no-such-plan.toml" --faults no-such-plan.toml --gpus 64 --no-reference
check 2 "usage: bench_every_rank" --bogus
exit $status
