#!/usr/bin/env bash
# The GPU smoke check, one command on a one-server machine with 1–8 GPUs:
#   scripts/gpu-check.sh [--no-build] [--build-dir DIR] [--out DIR] [--timeout S] [--cpu-dry-run]
# 1. builds with the CUDA device (unless --no-build);
# 2. runs every GPU test case (label gpu: test_gpu, one process per case; exit 77 is
#    SKIPPED — no GPU, or fewer GPUs than the case needs — never passed);
# 3. compute-sanitizer (memcheck) on a 1-GPU run of every op kind;
# 4. `twinscale run --device cuda` of synthetic layouts and the tiny presets, each under
#    a timeout, for every case whose rank count fits the GPUs (NCCL refuses two ranks
#    on one GPU): 8-rank 8x1x1, 1x1x8, 2x1x4, 2x2x2, 1x8x1 and tiny-* on an 8-GPU
#    server; smaller layouts on smaller machines; the rest SKIPPED;
# 5. a kill-one-rank run (≥ 2 GPUs) that must end in the hang report naming the rank;
# 6. FP8: on a GPU with FP8 (compute capability ≥ 8.9, nvidia-smi's
#    compute_cap) a one-GPU FP8 job runs and is probed (cuBLASLt FP8 GEMMs, casts, scale
#    updates), and tiny-fp8 runs on 8 GPUs; below 8.9 the FP8 job must be refused with a
#    message naming the requirement;
# 7. the twin loop on this server: `probe --device cuda` of a tiny job (configuration A,
#    2 GPUs) → simulate another pipeline/data-parallel split B with the probe's table and
#    cluster → run B for real → compare (iteration error, calibration coverage); with
#    --cpu-dry-run the same on the CPU device.
# Prints one summary line per case: "gpu-check: <case> PASS|FAIL|SKIPPED (<detail>)"
# and exits 1 if any case failed. Logs go to --out (default build/gpu-check).
# --cpu-dry-run checks this script's own mechanics on a machine without GPUs: steps 4,
# 5 and 7 with --device cpu as if there were 8 GPUs (steps 2, 3 and 6 are skipped).
set -uo pipefail
cd "$(dirname "$0")/.."
build=build
out=""
do_build=1
case_timeout=300
device=cuda
while [ $# -gt 0 ]; do
  case "$1" in
  --no-build) do_build=0 ;;
  --build-dir) build="$2"; shift ;;
  --out) out="$2"; shift ;;
  --timeout) case_timeout="$2"; shift ;;
  --cpu-dry-run) device=cpu ;;
  *) echo "gpu-check: unknown option $1 (valid: --no-build, --build-dir DIR, --out DIR, --timeout S, --cpu-dry-run)" >&2; exit 2 ;;
  esac
  shift
done
out=${out:-$build/gpu-check}
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
failed=0

report() {  # case status detail
  local line="gpu-check: $1 $2${3:+ ($3)}"
  echo "$line" | tee -a "$summary"
  [ "$2" = FAIL ] && failed=1
  return 0
}

if [ "$do_build" = 1 ]; then
  jobs=${TWINSCALE_JOBS:-$(nproc)}
  if cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTWINSCALE_WITH_CUDA=ON >"$out/build.log" 2>&1 &&
     cmake --build "$build" -j "$jobs" >>"$out/build.log" 2>&1; then
    report build PASS
  else
    report build FAIL "see $out/build.log"
    exit 1
  fi
fi

test_gpu="$build/tests/test_gpu"
cli="$build/cli/twinscale"
gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); fi
echo "gpu-check: $gpus GPU(s) visible" | tee -a "$summary"
if [ "$device" = cpu ]; then
  gpus=8
  echo "gpu-check: --cpu-dry-run: runs with --device cpu as if 8 GPUs were visible" | tee -a "$summary"
fi

# 2. GPU test cases (ctest label gpu; the same binary, one process per case).
if [ "$device" = cpu ]; then
  report "tests" SKIPPED "--cpu-dry-run"
elif [ -x "$test_gpu" ]; then
  i=0
  while IFS= read -r name; do
    [ -z "$name" ] && continue
    i=$((i + 1))
    log="$out/test-$i.log"
    start=$(date +%s)
    timeout -k 10 "$case_timeout" "$test_gpu" "$name" >"$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    # Catch runs nothing, and exits 0, when the name does not match (a comma or a
    # bracket in a name is test-spec syntax): that is a failure of the check.
    if [ $rc = 0 ] && grep -q "No tests ran\|No test cases matched" "$log"; then rc=3; fi
    case $rc in
    0) report "test: $name" PASS "${secs} s" ;;
    77) report "test: $name" SKIPPED "$(grep -m1 '^SKIPPED' "$log" | sed 's/^SKIPPED: //')" ;;
    124 | 137) report "test: $name" FAIL "timed out after $case_timeout s, log $log" ;;
    *) report "test: $name" FAIL "exit $rc, log $log" ;;
    esac
  done < <("$test_gpu" --list-test-names-only 2>/dev/null | sed 's/^ *//')
else
  report "tests" FAIL "$test_gpu not built (CUDA toolkit missing at configure time?)"
fi

# 3. compute-sanitizer on a 1-GPU run.
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ "$gpus" -lt 1 ] || [ "$device" = cpu ]; then
  report "compute-sanitizer memcheck" SKIPPED "no GPU"
elif [ -z "$sanitizer" ] || [ ! -x "$test_gpu" ]; then
  report "compute-sanitizer memcheck" SKIPPED "compute-sanitizer or test_gpu not found"
else
  log="$out/sanitizer.log"
  # API errors are not reported: NCCL's own initialisation probes kernels for other
  # architectures (cudaFuncGetAttributes → error 209, 40 of them per run on an H200
  # with NCCL 2.28) and handles the result; memory errors are what this case is for.
  timeout -k 10 "$case_timeout" "$sanitizer" --tool memcheck --report-api-errors no --error-exitcode 9 \
    "$test_gpu" "cuda device: one rank runs every op kind and times each by its own event pair" >"$log" 2>&1
  rc=$?
  if [ $rc = 0 ] && grep -q "No tests ran\|No test cases matched" "$log"; then rc=3; fi
  errors=$(grep -m1 "ERROR SUMMARY" "$log" || echo "no summary")
  if [ $rc = 0 ]; then report "compute-sanitizer memcheck" PASS "$errors"; else report "compute-sanitizer memcheck" FAIL "exit $rc, $errors, log $log"; fi
fi

# 4. Runs with --device cuda, as many ranks as GPUs allow.
have_mpirun=0
command -v mpirun >/dev/null 2>&1 && have_mpirun=1
mpirun_cmd() { echo "mpirun --oversubscribe --allow-run-as-root --enable-recovery -np $1"; }
ranks_of() {  # TPxDPxPP → product
  local IFS=x; set -- $1; echo $(( $1 * $2 * $3 ))
}
run_case() {  # name ranks args...
  local name="$1" ranks="$2"; shift 2
  if [ "$ranks" -gt "$gpus" ]; then report "run $name" SKIPPED "needs $ranks GPUs, $gpus visible"; return; fi
  if [ "$have_mpirun" = 0 ] && [ "$ranks" -gt 1 ]; then report "run $name" SKIPPED "needs mpirun"; return; fi
  if [ ! -x "$cli" ]; then report "run $name" SKIPPED "$cli not built"; return; fi
  local dir="$out/run-${name//[^A-Za-z0-9]/_}" start rc
  rm -rf "$dir"
  start=$(date +%s)
  if [ "$have_mpirun" = 1 ]; then
    timeout -k 10 "$case_timeout" $(mpirun_cmd "$ranks") "$cli" run "$@" --device "$device" --timeout 60 \
      --run-dir "$dir" >"$dir.log" 2>&1
  else
    timeout -k 10 "$case_timeout" "$cli" run "$@" --device "$device" --timeout 60 --run-dir "$dir" >"$dir.log" 2>&1
  fi
  rc=$?
  local secs=$(( $(date +%s) - start ))
  if [ $rc = 0 ]; then report "run $name" PASS "$ranks rank(s), ${secs} s"; else report "run $name" FAIL "exit $rc, log $dir.log"; fi
}
for layout in 1x1x1 1x2x1 2x1x1 1x1x2 2x2x1 1x4x1 2x1x4 8x1x1 1x1x8 2x2x2 1x8x1; do
  run_case "synthetic $layout" "$(ranks_of $layout)" --synthetic "$layout" --synthetic-micro-batches 8 --synthetic-hidden 1024
done
for preset in tiny-1f1b tiny-interleaved tiny-megascale; do
  run_case "$preset" 8 --preset "$preset"
done

# 5. Kill one rank: the others must stop within the timeout and name it.
if [ "$gpus" -lt 2 ] || [ "$have_mpirun" = 0 ] || [ ! -x "$cli" ]; then
  report "kill one rank" SKIPPED "needs 2 GPUs and mpirun ($gpus GPU(s), mpirun $([ $have_mpirun = 1 ] && echo found || echo missing))"
else
  dir="$out/run-kill"
  rm -rf "$dir"
  # Tensor parallelism couples the two ranks at every micro-batch, so the survivor
  # needs the dead rank within a few ops (a pipeline stage could compute on for long:
  # computing is progress); enough micro-batches that the run outlasts the kill.
  timeout -k 10 "$case_timeout" $(mpirun_cmd 2) "$cli" run --synthetic 2x1x1 --synthetic-micro-batches 50000 \
    --synthetic-hidden 1024 --device "$device" --timeout 5 --run-dir "$dir" >"$dir.log" 2>&1 &
  job=$!
  for _ in $(seq 1 600); do [ -f "$dir/rank-1.started" ] && break; sleep 0.1; done
  sleep 1
  victim=$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' "$dir/rank-1.started" 2>/dev/null)
  [ -n "$victim" ] && kill -9 "$victim"
  wait $job
  named=0
  if [ -f "$dir/report.json" ]; then
    if command -v python3 >/dev/null 2>&1; then
      python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(0 if r["suspects"] and r["suspects"][0]["rank"] == 1 else 1)' \
        "$dir/report.json" && named=1
    else
      grep -q '"suspects": *\[ *{ *"logged_nothing": *[a-z]*, *"rank": *1[,}]\|"rank": *1[,}]' "$dir/report.json" && named=1
    fi
  fi
  if [ -n "$victim" ] && [ "$named" = 1 ]; then
    report "kill one rank" PASS "rank 1 killed, hang report names it"
  else
    report "kill one rank" FAIL "no hang report naming rank 1, log $dir.log"
  fi
fi

# 6. FP8: runs and probes where the GPU has FP8, refused (by name) where it has not.
fp8_job() {  # one rank, GEMMs of 512 × 1024 × 1024 and more in FP8
  printf 'name = "gpu-check-fp8"\ncluster = "tiny-h100"\n[model]\nlayers = 2\nhidden = 1024\nheads = 8\nseq_len = 512\nvocab = 8192\n[parallel]\ntp = 1\npp = 1\ndp = 1\nmicro_batch = 1\nglobal_batch = 2\n[schedule]\npipeline = "1f1b"\niterations = 1\n[precision]\ngemm = "fp8"\n'
}
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ')
fp8dir="$out/fp8"
rm -rf "$fp8dir" && mkdir -p "$fp8dir"
if [ "$device" = cpu ] || [ "$gpus" -lt 1 ] || [ ! -x "$cli" ]; then
  report "fp8" SKIPPED "needs a GPU and $cli"
elif [ -z "$cap" ]; then
  report "fp8" SKIPPED "nvidia-smi reports no compute capability"
else
  fp8_job >"$fp8dir/job.toml"
  timeout -k 10 "$case_timeout" "$cli" run "$fp8dir/job.toml" --device cuda --timeout 60 \
    --trace "$fp8dir/run.json" >"$fp8dir/run.log" 2>&1
  rc=$?
  if awk -v c="$cap" 'BEGIN { exit !(c >= 8.9) }'; then
    if [ $rc = 0 ]; then report "fp8 run (1 GPU, compute capability $cap)" PASS; else report "fp8 run (1 GPU, compute capability $cap)" FAIL "exit $rc, log $fp8dir/run.log"; fi
    if timeout -k 10 "$case_timeout" "$cli" probe "$fp8dir/job.toml" --device cuda --out "$fp8dir/cal.json" \
         >"$fp8dir/probe.log" 2>&1 && grep -q '"dtype": "fp8"' "$fp8dir/cal.json"; then
      report "fp8 probe (1 GPU)" PASS "$(grep -c '"dtype": "fp8"' "$fp8dir/cal.json") fp8 kernel entries"
    else
      report "fp8 probe (1 GPU)" FAIL "log $fp8dir/probe.log"
    fi
    run_case "tiny-fp8" 8 --preset tiny-fp8
  elif [ $rc = 1 ] && grep -q "8.9" "$fp8dir/run.log"; then
    report "fp8 refused (compute capability $cap)" PASS "$(grep -m1 -o 'FP8 tensor cores need[^;]*' "$fp8dir/run.log")"
  else
    report "fp8 refused (compute capability $cap)" FAIL "exit $rc without the 8.9 message, log $fp8dir/run.log"
  fi
fi

# 7. The twin loop: probe A → simulate B → run B → compare.
twin_job() {  # name pp dp global_batch
  printf 'name = "%s"\ncluster = "tiny-2tier"\n[model]\nlayers = 4\nhidden = 256\nheads = 8\nseq_len = 128\nvocab = 1024\n[parallel]\ntp = 1\npp = %s\ndp = %s\nmicro_batch = 1\nglobal_batch = %s\n[schedule]\npipeline = "1f1b"\niterations = 1\n' "$1" "$2" "$3" "$4"
}
twin_summary() {  # compare.json sim.json → "iteration error X %, coverage Y %"
  python3 -c 'import json, sys
c = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2]))
e = (c["b"]["span_s"] - c["a"]["span_s"]) / c["a"]["span_s"]
cov = s.get("calibration_coverage", {}).get("op_share", 0)
print("iteration error %+.1f %%, calibration coverage %.1f %% of ops" % (100 * e, 100 * cov))' "$1" "$2"
}
twin="$out/twin"
rm -rf "$twin" && mkdir -p "$twin"
if [ "$have_mpirun" = 0 ] || [ ! -x "$cli" ] || ! command -v python3 >/dev/null 2>&1; then
  report "twin loop" SKIPPED "needs mpirun, python3 and $cli"
elif [ "$gpus" -lt 2 ]; then
  report "twin loop" SKIPPED "probe A and run B need 2 GPUs, $gpus visible"
else
  twin_job twin-a 2 1 4 >"$twin/a.toml"
  twin_job twin-b 1 2 6 >"$twin/b.toml"
  if timeout -k 10 "$case_timeout" $(mpirun_cmd 2) "$cli" probe "$twin/a.toml" --device "$device" --out "$twin/cal.json" \
       --cluster-out "$twin/host.toml" >"$twin/probe.log" 2>&1 &&
     "$cli" simulate "$twin/b.toml" --cluster "$twin/host.toml" --calibration "$twin/cal.json" --no-aggregate \
       --json --trace "$twin/sim.json" >"$twin/sim-report.json" 2>"$twin/simulate.log" &&
     timeout -k 10 "$case_timeout" $(mpirun_cmd 2) "$cli" run "$twin/b.toml" --device "$device" --timeout 60 \
       --trace "$twin/run.json" >"$twin/run.log" 2>&1 &&
     "$cli" compare "$twin/run.json" "$twin/sim.json" --json >"$twin/compare.json" 2>"$twin/compare.log"; then
    report "twin loop (probe --device $device A, predict and run B)" PASS "$(twin_summary "$twin/compare.json" "$twin/sim-report.json")"
  else
    report "twin loop (probe --device $device A, predict and run B)" FAIL "logs in $twin"
  fi
fi

echo "gpu-check: summary in $summary"
exit $failed
