#!/usr/bin/env bash
# Outside the set: Megatron-Core r0.8.0's published H100 runs (Megatron-LM README,
# f2e5db402c: the model table and the 177B strong-scaling series), predicted with the
# megatron-core-0.8 stack, never fitted; the PP > 1 runs at every interleaving their
# stages allow (not published). Usage: experiments/outside_set/run.sh [OUTDIR]
# Writes OUTDIR/outside_set.csv, OUTDIR/outside_set.png, OUTDIR/jobs/*, OUTDIR/raw/*;
# prints the table and the strong-scaling slopes. ~25 s on 2 cores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
case "${1:-}" in
  -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "run.sh: unknown option '$1' (usage: experiments/outside_set/run.sh [OUTDIR]; --help)" >&2; exit 2 ;;
esac
out="${1:-$root/build/experiments/outside_set}"
mkdir -p "$out"
exec /usr/bin/python3 "$here/study.py" "$out"
