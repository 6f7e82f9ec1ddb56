#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer.
#
#   scripts/sanitize.sh [CTEST ARGS...]   the whole suite, e.g. scripts/sanitize.sh -R "schedules: "
#   scripts/sanitize.sh --readers         only the readers' layers (schedules, config, topology,
#                                         faults) and their unit tests, in build-fuzz/ (clang)
#
# Whole suite: builds build-asan/ (the default compiler, -fsanitize=address,undefined, every
# UB report fatal, CUDA left out) and runs ctest there; Open MPI's and its libraries' own
# leaks are suppressed with scripts/sanitize.supp, anything else — a leak, an overflow, a
# use-after-free, undefined behaviour in our code — fails the test that hit it. Heavy: a
# build with sanitizers takes ~3× the normal one (TWINSCALE_JOBS caps -j).
# --readers: reuses the fuzzing build of scripts/fuzz.sh (those layers are already
# compiled with ASan + UBSan there) and runs test_schedules, test_topology and
# test_faults without their [cli] and [slow] cases (the CLI binary is not built there) —
# minutes instead of an hour on a loaded 2-core machine.
#   scripts/sanitize.sh --threads        ThreadSanitizer over the code that runs on several
#                                         threads of one process (`sweep --threads`: whole
#                                         analytic evaluations side by side; the binary
#                                         trace's writer thread; closed forms computed
#                                         ahead; lowering and set-up split with a helper
#                                         thread), in build-tsan/
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${TWINSCALE_JOBS:-$(nproc)}
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# SimGrid switches actor stacks itself; detect_stack_use_after_return would misread that.
export ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=0:strict_string_checks=1"
export LSAN_OPTIONS="suppressions=$PWD/scripts/sanitize.supp:print_suppressions=0:fast_unwind_on_malloc=0"
# Open MPI unloads its MCA plugins at MPI_Finalize: their allocations would then be
# reported from an "<unknown module>" that no suppression can name. Keep them loaded.
export OMPI_MCA_mca_base_component_disable_dlclose=1
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

if [ "${1:-}" = "--readers" ]; then
  cxx=$(command -v clang++ || command -v clang++-14 || true)
  [ -n "$cxx" ] || { echo "sanitize.sh --readers: clang++ not found (apt install clang)" >&2; exit 2; }
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DTWINSCALE_FUZZ=ON -DTWINSCALE_WITH_CUDA=OFF "${launcher[@]}" >/dev/null
  tests=(test_schedules test_topology test_faults)
  cmake --build build-fuzz -j "$jobs" --target "${tests[@]}"
  status=0
  for t in "${tests[@]}"; do
    echo "== $t (ASan + UBSan)"
    build-fuzz/tests/$t "~[cli]~[slow]" || status=1
  done
  exit $status
fi

if [ "${1:-}" = "--threads" ]; then
  # the study library's threaded evaluation (every layer it calls compiled with TSan) and
  # the binary trace writer's thread (staging, the queue, the programs' metadata encoded
  # while it waits), the closed forms an analytic run computes ahead on another thread,
  # and the lowering and executor set-up split with a helper thread (common/
  # helper_thread.hpp; the prefetch tests' runs set up so), with their unit tests; a
  # reported race fails the run (halt_on_error)
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTWINSCALE_WITH_CUDA=OFF \
    -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" "${launcher[@]}" >/dev/null
  cmake --build build-tsan -j "$jobs" --target test_study test_schedules test_sim
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
  build-tsan/tests/test_study "evaluate in threads*"
  build-tsan/tests/test_schedules "binary trace writer*"
  build-tsan/tests/test_schedules "[helper_thread]"
  build-tsan/tests/test_sim "[closed_form_prefetch]"
  exit
fi

flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTWINSCALE_WITH_CUDA=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" "${launcher[@]}" >/dev/null
cmake --build build-asan -j "$jobs"
cd build-asan
ctest --output-on-failure -j "$jobs" --timeout 1800 "$@"
