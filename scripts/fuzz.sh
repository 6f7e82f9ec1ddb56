#!/usr/bin/env bash
# Fuzzes every reader with libFuzzer (Debian clang; ASan + UBSan), harnesses in fuzz/.
#
#   scripts/fuzz.sh [SECONDS] [HARNESS...]
#
# Builds build-fuzz/ (clang++, -DTWINSCALE_FUZZ=ON: only the readers' layers and fuzz/),
# seeds each harness's corpus from the presets and fuzz/corpus/, and runs each harness
# for SECONDS (default 60, split evenly among the harnesses run) with the dictionary
# fuzz/dict/twinscale.dict, a 10 s per-input timeout and a 2 GiB memory limit. Prints
# the inputs run per harness and the total; exits 1 on any crash, sanitizer report,
# hang (timeout) or out-of-memory, leaving the input in build-fuzz/artifacts/.
# The corpora grow in build-fuzz/corpus/<harness>/ across runs.
# Harnesses: job_toml cluster_toml fault_toml recovery_toml schedule_json trace_json trace_binary
# calibration_json cli_shapes lower_roundtrip json_document speed_csv study_toml chakra run_dir
# checkpoint_manifest study_store.
# Every TOML and JSON harness is also seeded with deeply nested documents (up to 100,000
# levels of table headers, dotted keys, inline tables and arrays; inputs may grow to
# 256 KiB so that they fit), the shape that once overflowed the TOML parser's stack.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
all=(job_toml cluster_toml fault_toml recovery_toml schedule_json trace_json trace_binary calibration_json cli_shapes lower_roundtrip
  json_document speed_csv study_toml chakra run_dir checkpoint_manifest study_store)
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=("${all[@]}")
cxx=$(command -v clang++ || command -v clang++-14 || true)
if [ -z "$cxx" ]; then
  echo "fuzz.sh: clang++ not found (apt install clang)" >&2
  exit 2
fi
jobs=${TWINSCALE_JOBS:-$(nproc)}
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# -O1 with line tables only: a quarter of the compile time of -O2 -g, and sanitizer
# reports still carry file:line
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DTWINSCALE_FUZZ=ON -DTWINSCALE_WITH_CUDA=OFF "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j "$jobs" --target "${harnesses[@]/#/fuzz_}" >/dev/null

# seed corpora: the presets and the hand-made seeds of fuzz/corpus/<harness>/
seed() { # harness, prefix byte (or ""), files...
  local h=$1 prefix=$2
  shift 2
  mkdir -p "build-fuzz/corpus/$h"
  for f in "$@"; do
    [ -f "$f" ] || continue
    { printf '%b' "$prefix"; cat "$f"; } >"build-fuzz/corpus/$h/seed-$(basename "$f")"
  done
}
seed job_toml "" presets/jobs/*.toml
seed cluster_toml "" presets/clusters/*.toml
seed fault_toml '\x00' presets/faults/*.toml
seed fault_toml '\x01' fuzz/corpus/fault_toml/*.toml
seed recovery_toml "" presets/recovery/*.toml
for h in schedule_json trace_json trace_binary calibration_json cli_shapes lower_roundtrip json_document speed_csv \
  study_toml run_dir checkpoint_manifest study_store; do
  seed "$h" "" fuzz/corpus/$h/*
done
# Chakra: the ET file of the harness's own job, which the harness writes when asked
if [[ " ${harnesses[*]} " == *" chakra "* ]]; then
  mkdir -p build-fuzz/corpus/chakra
  TWINSCALE_FUZZ_WRITE_SEED=build-fuzz/corpus/chakra/seed-tiny-1f1b.0.et build-fuzz/fuzz/fuzz_chakra
fi
# the SQLite store: a small store of the harness's own study, written through the store's writer
if [[ " ${harnesses[*]} " == *" study_store "* ]]; then
  mkdir -p build-fuzz/corpus/study_store
  TWINSCALE_FUZZ_WRITE_SEED=build-fuzz/corpus/study_store/seed-two-points.db build-fuzz/fuzz/fuzz_study_store
fi
# deep nesting (written here rather than kept as files: they are long runs of one character)
deep() { # harness, prefix byte (or ""), name, text
  mkdir -p "build-fuzz/corpus/$1"
  { printf '%b' "$2"; printf '%s' "$4"; } >"build-fuzz/corpus/$1/seed-deep-$3"
}
rep() { printf "%${2}s" "" | sed "s/ /$1/g"; } # text, count
for h in job_toml cluster_toml recovery_toml study_toml fault_toml; do
  p=""
  [ "$h" = fault_toml ] && p='\x00'
  for n in 20000 100000; do
    deep "$h" "$p" "header-$n" "[$(rep a. $n)b]"$'\n'"x = 1"
    deep "$h" "$p" "key-$n" "$(rep a. $n)b = 1"
    deep "$h" "$p" "array-$n" "a = $(rep '\[' $n)$(rep '\]' $n)"
    deep "$h" "$p" "unclosed-$n" "a = $(rep '\[' $n)"
  done
  deep "$h" "$p" "quoted-key" "$(rep '"a".' 30000)b = 1"
  deep "$h" "$p" inline "a = $(rep '{b = ' 6000)1$(rep '}' 6000)"
  deep "$h" "$p" inline-40000 "a = $(rep '{b=' 40000)1$(rep '}' 40000)"
  deep "$h" "$p" array-tables "$(rep '[[a]]\n' 20000)"
done
# (not for run_dir and checkpoint_manifest: their parse is json_document's, and a file per input is slow)
for h in json_document calibration_json trace_json schedule_json; do
  for n in 30000 100000; do
    deep "$h" "" "array-$n" "$(rep '\[' $n)$(rep '\]' $n)"
    deep "$h" "" "unclosed-$n" "$(rep '\[' $n)"
  done
  deep "$h" "" object "$(rep '{"a":' 8000)1$(rep '}' 8000)"
  deep "$h" "" object-40000 "$(rep '{"":' 40000)1$(rep '}' 40000)"
  deep "$h" "" "long-key" "{\"$(rep a 200000)\":1}"
done

mkdir -p build-fuzz/artifacts
# the harnesses that read files (run_dir, checkpoint_manifest, study_store) write each input
# under $TMPDIR: memory, where there is one, rather than the disk
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
per=$(( seconds / ${#harnesses[@]} ))
[ "$per" -ge 1 ] || per=1
total=0
status=0
for h in "${harnesses[@]}"; do
  log="build-fuzz/fuzz_$h.log"
  if build-fuzz/fuzz/fuzz_$h "build-fuzz/corpus/$h" -dict=fuzz/dict/twinscale.dict -max_total_time="$per" \
       -timeout=10 -rss_limit_mb=2048 -max_len=262144 -print_final_stats=1 \
       -artifact_prefix="build-fuzz/artifacts/$h-" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    echo "fuzz_$h: ${runs:-0} inputs in ${per} s, 0 crashes"
    total=$(( total + ${runs:-0} ))
  else
    echo "fuzz_$h: FAILED (crash, sanitizer report, hang or out-of-memory); see $log and build-fuzz/artifacts/"
    grep -E "ERROR|SUMMARY|internal error|untyped|round-trip|validate" "$log" | head -5 || true
    status=1
  fi
done
echo "fuzz.sh: $total inputs in all"
exit $status
