#!/usr/bin/env bash
# Installs twinscale's build and test dependencies from Debian (12, bookworm) with apt.
# Nothing is downloaded from anywhere else. Safe to re-run: installs only what is missing.
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build pkg-config
  libsimgrid-dev        # the simulator's engine (sim/)
  libboost-graph-dev    # the fabric graph (topology/)
  libeigen3-dev         # GEMMs of the CPU executor (backend/)
  libcli11-dev          # the command line (cli/)
  catch2                # tests
  libopenmpi-dev openmpi-bin  # the CPU executor and its launcher (backend/)
  libtomlplusplus-dev   # TOML job, cluster and fault files (config/)
  nlohmann-json3-dev    # schedule IR, traces and --json output
  libhiredis-dev redis-server # Redis rendezvous (backend/), tests start their own server
  python3-matplotlib    # plots of experiments and campaigns
  clang-format-14       # scripts/format.sh (the house style, .clang-format)
  clang libclang-rt-14-dev # libFuzzer harnesses of the readers (fuzz/, scripts/fuzz.sh): the compiler and its fuzzer/sanitizer runtimes
  libsqlite3-dev        # results store of `twinscale sweep` (study/)
  libprotobuf-dev protobuf-compiler # MLCommons Chakra execution traces (formats/): the messages and protoc
  pybind11-dev python3-dev # the Python module (python/: import twinscale)
  python3-pytest        # tests of the Python API (ctest python_api)
  chromium              # headless check of `twinscale report` pages (ctest report_chromium; skipped without it)
  libjs-vega            # the charts of `twinscale report`, embedded into each page at build time (diagnose/report/):
                        # Vega 5 draws axes, legends, tooltips and zoom from a declarative spec; Debian's
                        # other choice, libjs-d3, is 3.5 (2016) and would leave all of that to hand-written code
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
