#!/usr/bin/env bash
# What a folder's run.sh does for a study.py that takes OUTDIR and options: an option
# (--help or a mistyped one) goes to study.py, whose argparse answers it; otherwise OUTDIR
# (default build/experiments/NAME) is created and the study runs into it.
# Usage (from experiments/NAME/run.sh): exec "$here/../lib/run_study.sh" NAME "$@"
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
name="$1"
shift
study="$here/../$name/study.py"
[[ "${1:-}" == -* ]] && exec /usr/bin/python3 "$study" "$@"
out="${1:-$here/../../build/experiments/$name}"
mkdir -p "$out"
exec /usr/bin/python3 "$study" "$out"
