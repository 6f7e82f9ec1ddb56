#!/usr/bin/env python3
"""The estimated parameter of the validation set, re-estimated (docs/fidelity.md,
"Estimated parameters"): A100's sustained tensor clock (`sustained_clock_ratio` of
A100-SXM-80GB in presets/hardware/gpus.toml), bounded by NVIDIA's HPL Rpeak clock at the
400 W limit (1,305 of 1,410 MHz: 0.926) and the boost clock (1.0). For each value of the
scan, every A100 timing row of sections A, D and E is simulated in analytic mode
(study.py with --gpu-override) and the mean |error| over those rows printed with each
section's mean; the estimate is the value of least mean |error|.

Usage: experiments/validation/estimate.py [OUTDIR] [--values 0.926,0.935,...]
Takes about half a minute per value on 2 cores (TWINSCALE_CLI selects the binary as in
run.sh; /usr/bin/python3 with Debian's matplotlib runs study.py, as in run.sh).
"""
import argparse
import csv
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GPU = "A100-SXM-80GB"
LOW, HIGH = 0.926, 1.0  # HPL Rpeak clock at the power limit; boost clock


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", nargs="?", default=os.path.join(ROOT, "build", "experiments", "estimate"))
    ap.add_argument("--values", default="0.926,0.93,0.935,0.94,0.945,0.95,0.96,0.975,1.0")
    a = ap.parse_args()
    try:
        values = [float(v) for v in a.values.split(",")]
    except ValueError:
        ap.error(f"--values '{a.values}': expected comma-separated numbers, e.g. 0.93,0.95")
    for v in values:
        if not LOW <= v <= HIGH:
            ap.error(f"--values: {v} is outside the parameter's bounds [{LOW}, {HIGH}]")
    results = []
    for v in values:
        out = os.path.join(a.outdir, f"clock-{v}")
        cmd = ["/usr/bin/python3", os.path.join(HERE, "study.py"), out, "--flow-max-gpus", "0", "--sections", "A,D,E",
               "--gpu-override", f"{GPU}.sustained_clock_ratio={v}"]
        run = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if run.returncode != 0:
            sys.exit(f"estimate.py: study.py failed for {v}:\n{run.stderr}")
        with open(os.path.join(out, "validation.csv")) as f:
            rows = [r for r in csv.DictReader(f) if r["mode"] == "analytic" and r["error_pct"] != ""
                    and r["section"] in ("A", "D", "E")]
        errs = {s: [abs(float(r["error_pct"])) for r in rows if r["section"] == s] for s in ("A", "D", "E")}
        every = [e for s in errs.values() for e in s]
        results.append((sum(every) / len(every), v, {s: sum(e) / len(e) for s, e in errs.items()},
                        sum(e > 8 for e in every), len(every)))
        print(f"sustained_clock_ratio {v:.3f}: mean |error| {results[-1][0]:.2f} % over {len(every)} rows "
              f"(A {results[-1][2]['A']:.1f}, D {results[-1][2]['D']:.1f}, E {results[-1][2]['E']:.1f}); "
              f"beyond 8 %: {results[-1][3]}", flush=True)
    best = min(results)
    print(f"estimate: sustained_clock_ratio = {best[1]:.3f} (mean |error| {best[0]:.2f} %)")


if __name__ == "__main__":
    main()
