#!/usr/bin/env bash
# Golden-output test of the twinscale CLI on the tiny presets (cases.txt).
#   tests/golden/golden.sh TWINSCALE            compare; print a unified diff per change; exit 1
#   tests/golden/golden.sh TWINSCALE --refresh  rewrite the NAME.out files
set -uo pipefail
cli=${1:?usage: golden.sh TWINSCALE [--refresh]}
mode=${2:-check}
dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
while read -r name args; do
  case "$name" in "" | \#*) continue ;; esac
  # shellcheck disable=SC2086 # the arguments are words
  if ! "$cli" $args > "$tmp/$name.out" 2> "$tmp/$name.err"; then
    echo "golden: twinscale $args failed:"; cat "$tmp/$name.err"
    failed=1
    continue
  fi
  if [ "$mode" = --refresh ]; then
    cp "$tmp/$name.out" "$dir/$name.out"
    echo "golden: wrote tests/golden/$name.out"
  elif ! diff -u --label "tests/golden/$name.out (expected)" --label "twinscale $args (now)" \
         "$dir/$name.out" "$tmp/$name.out"; then
    echo "golden: $name changed (above: - expected, + now). If the change is intended, run"
    echo "        scripts/refresh-golden.sh and commit the new tests/golden/$name.out."
    failed=1
  fi
done < "$dir/cases.txt"
exit "$failed"
