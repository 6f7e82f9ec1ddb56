#!/usr/bin/env bash
# A Catch2 test case whose name holds ';' never runs under ctest: catch_discover_tests
# registers it as a CMake list, cut at the ';', and the shortened filter matches no test
# (ctest then reports "Passed" for a run of nothing). Fails listing such names.
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
bad=$(grep -rnE 'TEST_CASE\("[^"]*;' "$root/tests" --include='*.cpp' || true)
if [ -n "$bad" ]; then
  echo "test names with ';' (ctest would run nothing for them):" >&2
  echo "$bad" >&2
  exit 1
fi
# A name that starts with '-' reaches the test executable as an option ("Unrecognised
# token"), so ctest reports a failure that says nothing about the test.
dash=$(grep -rnE 'TEST_CASE\("-' "$root/tests" --include='*.cpp' || true)
if [ -n "$dash" ]; then
  echo "test names starting with '-' (read as an option by the test executable):" >&2
  echo "$dash" >&2
  exit 1
fi
echo "test names: none holds ';' or starts with '-'"
