#!/usr/bin/env bash
# Rewrites tests/golden/*.out from the built CLI (build/cli/twinscale; scripts/build.sh
# first). Run it after a change whose effect on the outputs is intended, then review
# `git diff tests/golden` and commit it with the change.
set -euo pipefail
cd "$(dirname "$0")/.."
exec tests/golden/golden.sh "$PWD/build/cli/twinscale" --refresh
