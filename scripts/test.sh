#!/usr/bin/env bash
# The README's second command: install what is missing, build, run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
(cd build && ctest --output-on-failure -j "${TWINSCALE_JOBS:-$(nproc)}" --timeout 600)
# A 60-second fuzzing smoke run of every reader (fuzz/), when clang is installed; builds
# only the readers' layers, in build-fuzz/. TWINSCALE_NO_FUZZ=1 skips it.
if command -v clang++ >/dev/null 2>&1 && [ -z "${TWINSCALE_NO_FUZZ:-}" ]; then
  scripts/fuzz.sh 60
fi
