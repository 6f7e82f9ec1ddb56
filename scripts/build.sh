#!/usr/bin/env bash
# Configures and builds twinscale into ./build (Release with debug info).
# ccache, when installed, is used as the compiler launcher (it only speeds up rebuilds).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${TWINSCALE_JOBS:-$(nproc)}
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
cmake --build build -j "$jobs"
