#!/usr/bin/env bash
# The README's second command: install what is missing, build, run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
ctest --output-on-failure -j "${TWINSCALE_JOBS:-$(nproc)}" --timeout 600
