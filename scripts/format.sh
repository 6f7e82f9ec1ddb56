#!/usr/bin/env bash
# Formats every tracked C++ source (.cpp, .hpp, .cu) with clang-format 14 (Debian package
# clang-format-14) and the checked-in .clang-format.
#   scripts/format.sh           rewrite the files in place
#   scripts/format.sh --check   change nothing; list the files that differ, exit 1 if any
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: scripts/format.sh [--check]" >&2; exit 2 ;;
esac
cf=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$cf" ]; then
  echo "scripts/format.sh: clang-format-14 not found (apt-get install clang-format-14)" >&2
  exit 2
fi
version=$("$cf" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [ "$version" != 14 ]; then
  echo "scripts/format.sh: $cf is clang-format $version; the style is pinned to 14 (clang-format-14)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu')
if [ "$check" = 0 ]; then
  "$cf" --style=file -i "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! "$cf" --style=file "$f" | cmp -s - "$f"; then
    echo "$f"
    bad=1
  fi
done
if [ "$bad" = 1 ]; then
  echo "scripts/format.sh: the files above differ from .clang-format (run scripts/format.sh)" >&2
fi
exit "$bad"
