#!/usr/bin/env bash
# Configures and builds twinscale into ./build (Release with debug info).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${TWINSCALE_JOBS:-$(nproc)}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
