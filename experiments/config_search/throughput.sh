#!/usr/bin/env bash
# Sweep throughput: the 1,000-point analytic study random-1000.toml at 12,288
# GPUs, run four ways back to back into fresh stores: one process, one process on N threads
# (`--threads N`), `mpirun -np N` (rank 0 computes too) and N `--shard i/N` processes side
# by side (no MPI: what the machine gives N independent processes). Prints wall time,
# points/s and speed-up over one process, and checks that the four stores hold the same rows.
# Usage: experiments/config_search/throughput.sh [N=2] [OUTDIR] [STUDY]   (about 1 min on 2
# idle cores; STUDY: another study file, default random-1000.toml). As root, Open MPI
# refuses to start unless allowed: the script then passes --allow-run-as-root itself. A
# run that fails stops the script, naming the run and the end of its log.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
n="${1:-2}"
out="${2:-$root/build/experiments/config_search/throughput}"
cli="${TWINSCALE_CLI:-$root/build/cli/twinscale}"
study="${3:-$here/random-1000.toml}"
mpirun_args=(${TWINSCALE_MPIRUN_ARGS:-})
if [ "$(id -u)" = 0 ] && [ -z "${OMPI_ALLOW_RUN_AS_ROOT:-}" ]; then mpirun_args+=(--allow-run-as-root); fi
mkdir -p "$out"
rm -f "$out"/one.db* "$out"/threads.db* "$out"/mpi.db* "$out"/shards.db*
now() { date +%s.%N; }
failed() { # WHAT LOG STATUS: name the run that failed and show the end of its log
  echo "throughput.sh: $1 failed (exit $3); the end of $2:" >&2
  tail -n 15 "$2" >&2
  exit 1
}
t0=$(now)
"$cli" sweep "$study" --db "$out/one.db" --progress never > /dev/null 2> "$out/one.log" ||
  failed "the one-process sweep" "$out/one.log" $?
t1=$(now)
"$cli" sweep "$study" --db "$out/threads.db" --progress never --threads "$n" > /dev/null 2> "$out/threads.log" ||
  failed "the sweep on $n threads" "$out/threads.log" $?
t1t=$(now)
mpirun "${mpirun_args[@]}" -np "$n" "$cli" sweep "$study" --db "$out/mpi.db" --progress never > /dev/null \
  2> "$out/mpi.log" || failed "mpirun -np $n ${mpirun_args[*]} sweep" "$out/mpi.log" $?
t2=$(now)
pids=()
for ((i = 0; i < n; i++)); do
  "$cli" sweep "$study" --db "$out/shards.db" --shard "$i/$n" --progress never > /dev/null 2> "$out/shard$i.log" &
  pids+=($!)
done
for i in "${!pids[@]}"; do wait "${pids[$i]}" || failed "sweep --shard $i/$n" "$out/shard$i.log" $?; done
t3=$(now)
rows() { # digest of the store's rows (python3's sqlite3: no sqlite3 shell needed)
  python3 -c 'import sqlite3, sys, hashlib; print(hashlib.md5(repr(sqlite3.connect(sys.argv[1]).execute("SELECT * FROM points ORDER BY id").fetchall()).encode()).hexdigest()[:12])' "$1"
}
points=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT COUNT(*) FROM points").fetchone()[0])' "$out/one.db")
python3 - "$t0" "$t1" "$t2" "$t3" "$n" "$points" "$t1t" <<'PY'
import sys
t0, t1, t2, t3, n, points, t1t = map(float, sys.argv[1:8])
one, thr, mpi, sh = t1 - t0, t1t - t1, t2 - t1t, t3 - t2
print(f"| run | wall | points/s | speed-up |\n|---|---|---|---|")
print(f"| 1 process | {one:.1f} s | {points/one:.1f} | — |")
print(f"| 1 process, --threads {int(n)} | {thr:.1f} s | {points/thr:.1f} | {one/thr:.2f}× |")
print(f"| mpirun -np {int(n)} | {mpi:.1f} s | {points/mpi:.1f} | {one/mpi:.2f}× |")
print(f"| {int(n)} --shard i/{int(n)} processes | {sh:.1f} s | {points/sh:.1f} | {one/sh:.2f}× |")
PY
grep -h "rank .* computed" "$out/mpi.log" || true
a=$(rows "$out/one.db") t=$(rows "$out/threads.db") b=$(rows "$out/mpi.db") c=$(rows "$out/shards.db")
echo "rows of the four stores: $a $t $b $c ($([ "$a" = "$t" ] && [ "$a" = "$b" ] && [ "$b" = "$c" ] && echo identical || echo DIFFERENT))"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
