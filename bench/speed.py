#!/usr/bin/env python3
"""Whole-process speed of the twinscale binary, as a user sees it (README "Benchmarks").

Times, from outside the process (start-up, library loading and set-up included):
  1. `twinscale --help`;
  2. `twinscale simulate --preset gpt-175b-megascale --gpus 12288 --mode analytic`;
  3. `twinscale sweep` of the 756-point study bench/studies/gpt175b-12288-analytic.toml
     (GPT-175B at 12,288 GPUs: TP x PP x VPP x micro-batch x recomputation), in points/s.
Each figure is the median of --runs runs (wall and CPU = user + system seconds of the child,
peak RSS of the child). With --check K, K of the sweep's feasible points (evenly spread; 0:
all) are simulated again with `twinscale simulate JOB --mode analytic --json` from a job file
of that layout and their iteration time, MFU and breakdown compared for exact equality.
Prints the load average before and after: on a shared machine, quote it with the figures.

Usage: bench/speed.py [--cli build/cli/twinscale] [--runs N] [--sweep-runs N] [--check K]
                      [--vs OTHER_TWINSCALE]   (a second binary timed alternately, e.g. a baseline)
"""
import argparse
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STUDY = os.path.join(ROOT, "bench", "studies", "gpt175b-12288-analytic.toml")
PRESET = os.path.join(ROOT, "presets", "jobs", "gpt-175b-megascale.toml")
ANALYTIC = ["simulate", "--preset", "gpt-175b-megascale", "--gpus", "12288", "--mode", "analytic"]


def run_once(cmd):
    """(wall s, cpu s, peak RSS MiB) of one run of cmd, its output discarded."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"speed.py: {' '.join(cmd)} exited {p.returncode}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def medians(cmds, runs):
    """Runs each command of cmds in turn, runs times (one warm-up each first); medians."""
    for c in cmds:
        run_once(c)
    samples = [[] for _ in cmds]
    for _ in range(runs):
        for i, c in enumerate(cmds):
            samples[i].append(run_once(c))
    return [tuple(statistics.median(s[k] for s in samp) for k in range(3)) for samp in samples]


def sweep_cmd(cli, db):
    return [cli, "sweep", STUDY, "--db", db, "--progress", "never"]


def time_sweep(clis, runs, keep_db):
    out = [[] for _ in clis]
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(runs):
            for i, cli in enumerate(clis):
                db = os.path.join(tmp, f"s{i}-{r}.db")
                out[i].append(run_once(sweep_cmd(cli, db)))
                if i == 0 and r == 0:
                    with open(db, "rb") as f, open(keep_db, "wb") as g:
                        g.write(f.read())
    return [tuple(statistics.median(s[k] for s in samp) for k in range(3)) for samp in out]


def job_file(tp, pp, vpp, mb, recompute, path):
    text = open(PRESET).read()
    for key, value in (("tp", tp), ("pp", pp), ("vpp", vpp), ("micro_batch", mb)):
        text = re.sub(rf"(?m)^{key} = \d+", f"{key} = {value}", text)
    text = re.sub(r"(?m)^recompute = \w+", f"recompute = {'true' if recompute else 'false'}", text)
    text = re.sub(r'(?m)^pipeline = "\S+"', f'pipeline = "{"interleaved" if vpp > 1 else "1f1b"}"', text)
    with open(path, "w") as f:
        f.write(text)


def check_points(cli, db, k):
    rows = sqlite3.connect(db).execute(
        "SELECT id, inputs, iteration_time_s, mfu, compute_s, exposed_tp_s, exposed_pp_s, exposed_dp_s, bubble_s "
        "FROM points WHERE status = 'ok' ORDER BY id").fetchall()
    if k > 0 and len(rows) > k:
        rows = [rows[i * len(rows) // k] for i in range(k)]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for row in rows:
            inputs = json.loads(row[1])
            path = os.path.join(tmp, "job.toml")
            job_file(inputs["tp"], inputs["pp"], inputs["vpp"], inputs["micro_batch"], inputs["recompute"], path)
            out = subprocess.run([cli, "simulate", path, "--mode", "analytic", "--json"], capture_output=True,
                                 text=True, check=True).stdout
            j = json.loads(out)
            b = j["breakdown"]
            want = (j["iteration_time_s"], j["mfu"], b["compute_s"], b["exposed_tp_s"], b["exposed_pp_s"],
                    b["exposed_dp_s"], b["bubble_s"])
            if tuple(row[2:]) != want:
                bad += 1
                print(f"  point {row[0]} {inputs}: sweep {row[2:]} != simulate {want}")
    return len(rows), bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "cli", "twinscale"))
    ap.add_argument("--vs", help="a second twinscale binary, timed alternately (ratios A/B)")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--sweep-runs", type=int, default=1)
    ap.add_argument("--check", type=int, default=10, help="sweep points to re-simulate (0: all)")
    a = ap.parse_args()
    clis = [a.cli] + ([a.vs] if a.vs else [])
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}  ({os.cpu_count()} CPUs)")
    names = ["A " + a.cli] + (["B " + a.vs] if a.vs else [])
    print("medians of", a.runs, "runs (A and B alternately)" if a.vs else "runs")
    for label, args in (("--help", ["--help"]), ("simulate analytic, 12,288 GPUs", ANALYTIC)):
        res = medians([[c] + args for c in clis], a.runs)
        for n, (w, c, m) in zip(names, res):
            print(f"  {label:32s} {n[:1]}: wall {w:.4f} s, cpu {c:.4f} s, peak {m:.1f} MiB")
        if a.vs:
            print(f"  {label:32s} A/B: wall {res[0][0] / res[1][0]:.3f}, cpu {res[0][1] / res[1][1]:.3f}")
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "sweep.db")
        res = time_sweep(clis, a.sweep_runs, db)
        n = sqlite3.connect(db).execute("SELECT count(*) FROM points").fetchone()[0]
        for nm, (w, c, m) in zip(names, res):
            print(f"  sweep, {n} points (median of {a.sweep_runs}) {nm[:1]}: wall {w:.2f} s ({n / w:.1f} points/s), "
                  f"cpu {c:.2f} s ({n / c:.1f} points/s of CPU), peak {m:.0f} MiB")
        checked, bad = check_points(a.cli, db, a.check)
        print(f"  sweep points re-simulated with `simulate --mode analytic`: {checked}, "
              f"{'all equal' if bad == 0 else str(bad) + ' DIFFER'}")
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
