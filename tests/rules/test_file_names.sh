#!/usr/bin/env bash
# One naming for test sources: every test file under tests/<layer>/ is <what>_test.cpp
# (the mains, tests/catch_*.cpp and tests/gpu/gpu_main.cpp, are not test files). Fails
# listing the files named otherwise.
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
bad=$(cd "$root" && find tests -mindepth 2 -name '*.cpp' ! -name '*_test.cpp' ! -path tests/gpu/gpu_main.cpp | sort)
if [ -n "$bad" ]; then
  echo "test files not named <what>_test.cpp:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "test files: every one is named <what>_test.cpp"
