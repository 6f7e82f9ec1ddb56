#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer.
#
#   scripts/sanitize.sh [CTEST ARGS...]     e.g. scripts/sanitize.sh -R "schedules: "
#
# Builds build-asan/ (the default compiler, -fsanitize=address,undefined, every UB report
# fatal, CUDA left out) and runs ctest there. Leak reports from Open MPI's own libraries
# are suppressed with scripts/sanitize.supp; anything else — a leak, an overflow, a
# use-after-free, undefined behaviour in our code — fails the test that hit it.
# Heavy: a full build with sanitizers takes ~3× the normal one; TWINSCALE_JOBS caps -j.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${TWINSCALE_JOBS:-$(nproc)}
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTWINSCALE_WITH_CUDA=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" "${launcher[@]}" >/dev/null
cmake --build build-asan -j "$jobs"
# SimGrid switches actor stacks itself; detect_stack_use_after_return would misread that.
export ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=0:abort_on_error=0:strict_string_checks=1"
export LSAN_OPTIONS="suppressions=$PWD/scripts/sanitize.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd build-asan
ctest --output-on-failure -j "$jobs" --timeout 1800 "$@"
