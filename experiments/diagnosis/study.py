#!/usr/bin/env python3
"""Ground truth for `twinscale diagnose`: inject stragglers into simulated runs, diagnose
the per-rank CSVs, and count what was found (precision, recall, steps to detect).

Each case (kind, severity, count, seed) draws `count` bad components with a seeded RNG:
  gpu   one rank's GPU computes `severity` slower (time × (1 + severity));
  host  all 8 GPUs of one host do (ranks 8h..8h+7: the linear placement).
Each of `--steps` steps is one `twinscale simulate --mode analytic --every-rank` run whose
speed file holds the bad components' factor times a per-step, per-GPU noise
1 + noise·N(0,1) (kernel-time jitter; default σ 0.5 %), and optionally a persistent
per-GPU spread (--spread, the chip-to-chip variation, σ 1.3 % in Sinha et al. SC'22), which
is *not* a fault: chips it makes slow count as false positives. `twinscale diagnose`
reads the steps' CSVs; stragglers (gpu) or slow hosts (host) are compared with the truth.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import twinscale_study as ts  # noqa: E402

FIELDS = ["kind", "severity", "count", "gpus", "seeds", "steps", "noise", "spread", "true_pos", "false_pos",
          "false_neg", "precision", "recall", "steps_to_detect_mean", "steps_to_detect_max"]


def progress(done, total, start):
    if not sys.stderr.isatty() or done == 0:
        return
    el = time.monotonic() - start
    sys.stderr.write(f"\r  {done}/{total} cases, {el:.0f} s, ETA {el / done * (total - done):.0f} s   ")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def speed_lines(kind, bad, severity, gpus, noise_rng, noise, spread_f):
    factor = {}
    for r in range(gpus):
        f = spread_f[r] * (1 + noise * noise_rng.gauss(0, 1)) if noise > 0 else spread_f[r]
        if f != 1.0:
            factor[r] = f
    slow = 1 / (1 + severity)  # speed factor: time × (1 + severity)
    ranks = bad if kind == "gpu" else [8 * h + i for h in bad for i in range(8)]
    for r in ranks:
        factor[r] = factor.get(r, 1.0) * slow
    return ["scope,index,factor"] + [f"rank,{r},{factor[r]:.9f}" for r in sorted(factor)]


def run(cmd, ok=(0,)):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode not in ok:
        sys.exit(f"`{' '.join(map(str, cmd))}` failed (exit {p.returncode}):\n{p.stderr}")
    return p


def one_case(a, work, kind, severity, count, seed):
    rng = random.Random(f"{kind}:{severity}:{count}:{seed}")
    units = a.gpus if kind == "gpu" else a.gpus // 8
    bad = sorted(rng.sample(range(units), count))
    spread_rng = random.Random(f"spread:{seed}")
    spread_f = [max(0.05, 1 + a.spread * spread_rng.gauss(0, 1)) if a.spread > 0 else 1.0 for _ in range(a.gpus)]
    csvs = []
    for step in range(a.steps):
        noise_rng = random.Random(f"noise:{kind}:{severity}:{count}:{seed}:{step}")
        sf = os.path.join(work, f"speeds-{step}.csv")
        with open(sf, "w") as f:
            f.write("\n".join(speed_lines(kind, bad, severity, a.gpus, noise_rng, a.noise, spread_f)) + "\n")
        out = os.path.join(work, f"step-{step}.csv")
        run([ts.cli_path(), "simulate", "--preset", a.preset, "--gpus", a.gpus, "--global-batch", a.global_batch,
             "--cluster", a.cluster, "--mode", "analytic", "--every-rank", "--gpu-speed-file", sf,
             "--per-rank-csv", out, "--json"])
        csvs.append(out)
    p = run([ts.cli_path(), "diagnose", *csvs, "--json"], ok=(0, 4))
    d = json.loads(p.stdout)
    want = "straggler" if kind == "gpu" else "slow_host"
    found, steps = set(), {}
    for f in d["findings"]:
        if f["kind"] != want:
            continue
        key = f["ranks"][0] if kind == "gpu" else int(f["host"][len("host"):])
        found.add(key)
        steps[key] = f["detected_after_steps"]
    tp = found & set(bad)
    return len(tp), len(found - set(bad)), len(set(bad) - found), [steps[k] for k in tp]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--preset", default="gpt-175b-megascale")
    ap.add_argument("--cluster", default="megascale-ampere")
    ap.add_argument("--gpus", type=int, default=1536)
    ap.add_argument("--global-batch", type=int, default=768)
    ap.add_argument("--kinds", default="gpu,host")
    ap.add_argument("--severities", default="0.02,0.03,0.05,0.10,0.20")
    ap.add_argument("--counts", default="1,4,16,64")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--noise", type=float, default=0.005)
    ap.add_argument("--spread", type=float, default=0.0)
    ap.add_argument("--tag", default="diagnosis")
    ap.add_argument("--replot", action="store_true", help="only redraw OUTDIR/TAG.png from OUTDIR/TAG.csv")
    a = ap.parse_args()
    if a.replot:
        import csv
        with open(os.path.join(a.outdir, a.tag + ".csv")) as f:
            rows = [{k: (v if k == "kind" else float(v) if v else 0.0) for k, v in r.items()} for r in csv.DictReader(f)]
        for r in rows:
            r["count"] = int(r["count"])
        plot(rows, os.path.join(a.outdir, a.tag + ".png"), a)
        return
    os.makedirs(a.outdir, exist_ok=True)
    work = os.path.join(a.outdir, "work")
    os.makedirs(work, exist_ok=True)
    cases = [(k, float(s), int(c)) for k in a.kinds.split(",") for s in a.severities.split(",")
             for c in a.counts.split(",")]
    rows, start, done = [], time.monotonic(), 0
    for kind, sev, count in cases:
        tp = fp = fn = 0
        steps = []
        units = a.gpus if kind == "gpu" else a.gpus // 8
        if count > units:
            continue
        for seed in range(a.seeds):
            t, f, n, s = one_case(a, work, kind, sev, count, seed)
            tp, fp, fn = tp + t, fp + f, fn + n
            steps += s
            done += 1
            progress(done, len(cases) * a.seeds, start)
        rows.append({"kind": kind, "severity": sev, "count": count, "gpus": a.gpus, "seeds": a.seeds,
                     "steps": a.steps, "noise": a.noise, "spread": a.spread, "true_pos": tp, "false_pos": fp,
                     "false_neg": fn, "precision": tp / (tp + fp) if tp + fp else 1.0,
                     "recall": tp / (tp + fn) if tp + fn else 1.0,
                     "steps_to_detect_mean": sum(steps) / len(steps) if steps else 0.0,
                     "steps_to_detect_max": max(steps) if steps else 0})
    path = os.path.join(a.outdir, a.tag + ".csv")
    ts.write_csv(path, rows, FIELDS)
    print(ts.table(["kind", "severity", "count", "precision", "recall", "steps"],
                   [[r["kind"], f"{r['severity']:.2f}", str(r["count"]), f"{r['precision']:.3f}",
                     f"{r['recall']:.3f}", f"{r['steps_to_detect_mean']:.2f}"] for r in rows]))
    plot(rows, os.path.join(a.outdir, a.tag + ".png"), a)


def plot(rows, path, a):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    kinds = sorted({r["kind"] for r in rows})
    fig, axes = plt.subplots(2, len(kinds), figsize=(5 * len(kinds), 7), squeeze=False)
    for j, kind in enumerate(kinds):
        for i, metric in enumerate(["precision", "recall"]):
            ax = axes[i][j]
            for count in sorted({r["count"] for r in rows if r["kind"] == kind}):
                pts = [(100 * r["severity"], r[metric]) for r in rows if r["kind"] == kind and r["count"] == count]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{count} bad")
            ax.axvline(5, color="grey", lw=0.5)
            ax.axhline(0.95, color="grey", lw=0.5, ls="--")
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlabel("slowdown (%)")
            ax.set_ylabel(metric)
            r0 = next(r for r in rows if r["kind"] == kind)
            ax.set_title(f"{kind}: {metric} ({int(r0['gpus'])} GPUs, {int(r0['seeds'])} seeds, "
                         f"{int(r0['steps'])} step(s), spread {100 * r0['spread']:.1f} %)", fontsize=9)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path + ".tmp.png", dpi=100)
    os.replace(path + ".tmp.png", path)


if __name__ == "__main__":
    main()
