#!/usr/bin/env bash
# The error policy (common/error.hpp) as a grep over the sources:
#  1. no library ends the process: exit, _Exit, quick_exit, abort and MPI_Abort appear only
#     in cli/main.cpp and in backend::end_mpi_job (backend/work_queue.cpp), which only
#     main calls;
#  2. every error class (a class or struct named *Error with a base) derives from
#     twinscale::Error or from another *Error class, never from a std:: exception.
# Comments are not read. Fails listing the offending lines.
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
cd "$root"
sources=$(find . \( -path ./build -o -path './build-*' -o -path ./tests -o -path ./fuzz -o -path ./bench \
  -o -path ./.git \) -prune -o -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) \
  -print | sort)
failed=0

# 1. process exits outside the two allowed places (CLI11's `app.exit(e)` returns a code,
#    a device's `abort()` method cancels its communicators)
comment='^[^:]+:[0-9]+:[[:space:]]*(//|/\*|\*)'
call='(^|[^.>:_[:alnum:]])(std::)?(exit|_Exit|quick_exit|abort|MPI_Abort)[[:space:]]*\('
# shellcheck disable=SC2086 # the file list is words
ends=$(grep -nE "$call" $sources | grep -vE "$comment" | sed -E 's#//.*$##' | grep -E "$call" |
  grep -vE 'void[[:space:]]+abort[[:space:]]*\(' | grep -vE '^\./cli/main\.cpp:' |
  grep -vE '^\./backend/work_queue\.cpp:[0-9]+:[[:space:]]*(MPI_Abort\(MPI_COMM_WORLD, code\)|std::abort\(\))' || true)
if [ -n "$ends" ]; then
  echo "library code that ends the process (throw a twinscale::Error instead):" >&2
  echo "$ends" >&2
  failed=1
fi

# 2. error classes whose base is not twinscale::Error or another *Error (common/error.hpp
#    defines Error itself, on std::runtime_error)
# shellcheck disable=SC2086
bases=$(grep -nE '(class|struct)[[:space:]]+[[:alnum:]_]*Error[[:space:]]*(final[[:space:]]*)?:[^:]' $sources |
  grep -vE "$comment" | grep -vE '^\./common/error\.hpp:' |
  grep -vE ':[[:space:]]*(public|private|protected)?[[:space:]]*(twinscale::)?([[:alnum:]_]+::)*[[:alnum:]_]*Error[[:space:]]*\{' ||
  true)
if [ -n "$bases" ]; then
  echo "error classes not derived from twinscale::Error (common/error.hpp):" >&2
  echo "$bases" >&2
  failed=1
fi
[ "$failed" = 0 ] && echo "error policy: no library ends the process; every error class derives from twinscale::Error"
exit "$failed"
