#!/usr/bin/env bash
# docs/keys.md is generated from the key tables: fails when the committed file differs
# from what the generator prints now. Usage: keys_doc.sh GENERATOR DOCS_KEYS_MD
set -euo pipefail
generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
"$1" >"$generated"
if ! cmp -s "$generated" "$2"; then
  diff "$generated" "$2" | head -20 || true
  echo "docs/keys.md is out of date: run build/config/twinscale_keys_doc > docs/keys.md" >&2
  exit 1
fi
echo "docs/keys.md is up to date"
