#!/usr/bin/env python3
"""The severity grid at full scale: stragglers among 12,288 simulated GPUs,
precision and recall per slowdown, over many seeds, in one simulated step per seed.

Design (why a few runs carry 20 seeds): a *seed* is one independent draw of bad GPUs: a
disjoint random set of `--count` bad GPUs for each severity of `--severities` (default 64
GPUs at each of 2, 3, 4, 5, 10 and 20 %). `--sets-per-run N` puts the sets of N seeds,
disjoint, into one analytic every-rank run (default 4: 1,536 bad GPUs, 12.5 % of 12,288).
The detector scores a rank by its *own* compute time (forward + backward: its kernels at
its GPU's speed, which no other rank's slowness changes) against the median of its stage
peers (1,536 ranks per stage at TP 8 x PP 8 x DP 192), with a per-GPU noise drawn
independently for every rank. So a bad GPU's score depends only on its own factor, its
own noise and its peers' median and MAD; the other sets' bad GPUs (all on the slow side)
move that median by about eps/(2 phi(0)) sigma = 0.16 sigma of the noise for eps = 12.5 %
contamination, i.e. 0.08 % of the step for sigma 0.5 %: well below the 3 % threshold (it
shifts the edge of the curve at 3 % by that much, not the 5 % point). Each set is thus
scored as if it ran alone; recall is per set and severity. A false positive is a healthy
rank flagged; it belongs to no set, so every set of the run is charged with all of the
run's false positives (precision TP_s / (TP_s + FP_run) per set: conservative).

`--spread S` adds a persistent chip-to-chip spread (sigma S, e.g. 1.3 %, Sinha et al. SC'22)
that is *not* a fault. Then each seed simulates two steps: a healthy baseline step (spread
+ noise) and the step with the injected slowdowns, and `diagnose --baseline-steps 1`
scores each rank against its own baseline (the "became slower" detector), which cancels
the persistent spread. Without `--baseline` the plain peer detector is scored too.

Writes OUTDIR/TAG.csv (one row per detector and severity, pooled over seeds), OUTDIR/TAG-seeds.csv
(per seed and severity) and OUTDIR/TAG.png.
"""
import argparse
import json
import os
import random
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
import twinscale_study as ts  # noqa: E402
from study import run, progress  # noqa: E402

FIELDS = ["detector", "severity", "count", "gpus", "seeds", "noise", "spread", "true_pos", "false_pos_runs",
          "false_neg", "precision", "recall"]
SEED_FIELDS = ["detector", "seed", "severity", "count", "true_pos", "false_pos_run", "false_neg"]


def draw(run, sets, severities, count, gpus):
    """Disjoint bad sets of one run: [set][severity] -> ranks."""
    rng = random.Random(f"grid:{run}")
    ranks = rng.sample(range(gpus), sets * count * len(severities))
    out, i = [], 0
    for _ in range(sets):
        per = {}
        for s in severities:
            per[s] = sorted(ranks[i:i + count])
            i += count
        out.append(per)
    return out


def speed_file(path, gpus, factor_of_rank):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("scope,index,factor\n")
        for r in range(gpus):
            if factor_of_rank[r] != 1.0:
                f.write(f"rank,{r},{factor_of_rank[r]:.9f}\n")
    os.replace(tmp, path)


def simulate(a, work, name, factors):
    sf = os.path.join(work, name + "-speeds.csv")
    speed_file(sf, a.gpus, factors)
    out = os.path.join(work, name + ".csv")
    run([ts.cli_path(), "simulate", "--preset", a.preset, "--gpus", a.gpus, "--global-batch", a.global_batch,
         "--cluster", a.cluster, "--mode", "analytic", "--every-rank", "--gpu-speed-file", sf,
         "--per-rank-csv", out, "--json"])
    return out


def stragglers(csvs, extra):
    p = run([ts.cli_path(), "diagnose", *csvs, "--json", *extra], ok=(0, 4))
    return {f["ranks"][0] for f in json.loads(p.stdout)["findings"] if f["kind"] == "straggler"}


def one_run(a, work, run_index, severities):
    sets = draw(run_index, a.sets_per_run, severities, a.count, a.gpus)[:a.inject_sets or a.sets_per_run]
    noise_rng = random.Random(f"grid-noise:{run_index}")
    spread_rng = random.Random(f"grid-spread:{run_index}")
    spread = [max(0.05, 1 + a.spread * spread_rng.gauss(0, 1)) if a.spread > 0 else 1.0 for _ in range(a.gpus)]
    steps = []
    if a.spread > 0:  # the healthy baseline step
        base = [spread[r] * (1 + a.noise * noise_rng.gauss(0, 1)) for r in range(a.gpus)]
        steps.append(simulate(a, work, f"run{run_index}-base", base))
    faulty = [spread[r] * (1 + a.noise * noise_rng.gauss(0, 1)) for r in range(a.gpus)]
    for bad in sets:
        for s, ranks in bad.items():
            for r in ranks:
                faulty[r] /= 1 + s  # time x (1 + s)
    steps.append(simulate(a, work, f"run{run_index}", faulty))
    detectors = {"peers": stragglers(steps[-1:], [])}
    if a.spread > 0:
        detectors["own-baseline"] = stragglers(steps, ["--baseline-steps", "1"])
    all_bad = {r for bad in sets for ranks in bad.values() for r in ranks}
    rows = []
    for det, found in detectors.items():
        fp = len(found - all_bad)
        for j, bad in enumerate(sets):
            for s, ranks in bad.items():
                tp = len(found & set(ranks))
                rows.append({"detector": det, "seed": run_index * a.sets_per_run + j, "severity": s,
                             "count": a.count, "true_pos": tp, "false_pos_run": fp, "false_neg": len(ranks) - tp})
    return rows


def pool(a, seed_rows):
    out = []
    for det in dict.fromkeys(r["detector"] for r in seed_rows):
        for s in dict.fromkeys(r["severity"] for r in seed_rows):
            rs = [r for r in seed_rows if r["detector"] == det and r["severity"] == s]
            tp = sum(r["true_pos"] for r in rs)
            fp = sum(r["false_pos_run"] for r in rs)
            fn = sum(r["false_neg"] for r in rs)
            out.append({"detector": det, "severity": s, "count": a.count, "gpus": a.gpus, "seeds": len(rs),
                        "noise": a.noise, "spread": a.spread, "true_pos": tp, "false_pos_runs": fp,
                        "false_neg": fn, "precision": tp / (tp + fp) if tp + fp else 1.0,
                        "recall": tp / (tp + fn) if tp + fn else 1.0})
    return out


def plot(rows, path, a):
    plt = ts.matplotlib_pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for det in dict.fromkeys(r["detector"] for r in rows):
        pts = [(100 * r["severity"], r["precision"], r["recall"]) for r in rows if r["detector"] == det]
        ax.plot([p[0] for p in pts], [p[2] for p in pts], marker="o", label=f"recall ({det})")
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="x", ls="--", label=f"precision ({det})")
    ax.axvline(5, color="grey", lw=0.5)
    ax.axhline(0.95, color="grey", lw=0.5, ls=":")
    ax.set_xscale("log")
    ax.set_xticks([2, 3, 4, 5, 10, 20], ["2", "3", "4", "5", "10", "20"])
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("slowdown (%)")
    ax.set_title(f"{a.count} bad GPUs per slowdown among {int(rows[0]['gpus'])}, {int(rows[0]['seeds'])} seeds, "
                 f"noise {100 * rows[0]['noise']:.1f} %, spread {100 * rows[0]['spread']:.1f} %", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    ts.save_figure(fig, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--preset", default="gpt-175b-megascale")
    ap.add_argument("--cluster", default="megascale-ampere")
    ap.add_argument("--gpus", type=int, default=12288)
    ap.add_argument("--global-batch", type=int, default=1536)
    ap.add_argument("--severities", default="0.02,0.03,0.04,0.05,0.10,0.20")
    ap.add_argument("--count", type=int, default=64, help="bad GPUs per severity and seed")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--sets-per-run", type=int, default=4, help="independent bad sets (seeds) per simulated run")
    ap.add_argument("--inject-sets", type=int, default=0,
                    help="inject only the first K sets of each run's draw (same bad GPUs and noise: a paired check "
                         "that packing sets into one run does not change what is found); 0: all")
    ap.add_argument("--runs", type=int, default=0, help="with --inject-sets: number of runs (default: seeds / sets)")
    ap.add_argument("--replot", action="store_true", help="only redraw OUTDIR/TAG.png from OUTDIR/TAG.csv")
    ap.add_argument("--noise", type=float, default=0.005)
    ap.add_argument("--spread", type=float, default=0.0)
    ap.add_argument("--tag", default="grid-12288")
    a = ap.parse_args()
    severities = [float(s) for s in a.severities.split(",")]
    if a.replot:
        import csv
        with open(os.path.join(a.outdir, a.tag + ".csv")) as f:
            rows = [{k: (v if k == "detector" else float(v)) for k, v in r.items()} for r in csv.DictReader(f)]
        a.count = int(rows[0]["count"])
        plot(rows, os.path.join(a.outdir, a.tag + ".png"), a)
        return
    if a.seeds % a.sets_per_run:
        sys.exit(f"--seeds {a.seeds} must be a multiple of --sets-per-run {a.sets_per_run}")
    if a.count * len(severities) * a.sets_per_run > a.gpus:
        sys.exit(f"--count {a.count} x {len(severities)} severities x {a.sets_per_run} sets exceeds --gpus {a.gpus}")
    os.makedirs(a.outdir, exist_ok=True)
    work = os.path.join(a.outdir, "work-" + a.tag)
    os.makedirs(work, exist_ok=True)
    seed_csv = os.path.join(a.outdir, a.tag + "-seeds.csv")
    seed_rows, start = [], time.monotonic()
    runs = a.runs or a.seeds // a.sets_per_run
    for run_index in range(runs):
        seed_rows += one_run(a, work, run_index, severities)
        ts.write_csv(seed_csv, seed_rows, SEED_FIELDS)  # partial results survive an interrupted run
        progress(run_index + 1, runs, start)
    rows = pool(a, seed_rows)
    ts.write_csv(os.path.join(a.outdir, a.tag + ".csv"), rows, FIELDS)
    print(ts.table(["detector", "slowdown", "bad/seed", "seeds", "precision", "recall"],
                   [[r["detector"], f"{100 * r['severity']:.0f} %", str(r["count"]), str(r["seeds"]),
                     f"{r['precision']:.3f}", f"{r['recall']:.3f}"] for r in rows]))
    plot(rows, os.path.join(a.outdir, a.tag + ".png"), a)


if __name__ == "__main__":
    main()
