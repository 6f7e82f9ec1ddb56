#!/usr/bin/env bash
# The README's first command: install dependencies (apt), build, run the default study.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
scripts/default-study.sh
