#!/usr/bin/env bash
# The README's first command: install dependencies (apt), build, make `import twinscale`
# work for the python3 on PATH, run the default study.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
scripts/install-python.sh || echo "bootstrap: the Python module is not installed (reason above); the rest is" >&2
scripts/default-study.sh
