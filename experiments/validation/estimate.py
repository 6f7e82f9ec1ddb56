#!/usr/bin/env python3
"""The estimated parameters of the validation set, re-estimated (docs/fidelity.md,
"Estimated parameters"): the sustained tensor clock (`sustained_clock_ratio` in
presets/hardware/gpus.toml) of
  A100  (A100-SXM-80GB), bounded by NVIDIA's HPL Rpeak clock at the 400 W limit (1,305 of
        1,410 MHz: 0.926) and the boost clock (1.0), from every A100 timing row (sections
        A, D and E);
  H100  (H100-SXM; H200-SXM states the same figure), bounded by the span of its sources
        (0.85–0.95: gpus.toml), from section F's H100 rows.
For each value of the scan, the section's rows are simulated in analytic mode (study.py with
--gpu-override) and the mean |error| over those rows printed with each section's mean; the
estimate is the value of least mean |error|.

Usage: experiments/validation/estimate.py [OUTDIR] [--gpu A100|H100] [--values 0.926,0.935,...]
Takes about half a minute per value on 2 cores for A100, a few seconds for H100
(TWINSCALE_CLI selects the binary as in run.sh; /usr/bin/python3 with Debian's matplotlib
runs study.py, as in run.sh).
"""
import argparse
import csv
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
# catalogue entry, bounds (facts), sections whose timing rows estimate it, default scan
from study import ESTIMATED_CLOCKS as PARAMS  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", nargs="?", default=os.path.join(ROOT, "build", "experiments", "estimate"))
    ap.add_argument("--gpu", default="A100", choices=sorted(PARAMS), help="which parameter (default: A100)")
    ap.add_argument("--values", default="", help="values to scan (default: the parameter's grid)")
    a = ap.parse_args()
    gpu, low, high, sections, grid = PARAMS[a.gpu]
    text = a.values or grid
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        ap.error(f"--values '{text}': expected comma-separated numbers, e.g. 0.93,0.95")
    for v in values:
        if not low <= v <= high:
            ap.error(f"--values: {v} is outside the parameter's bounds [{low}, {high}]")
    results = []
    for v in values:
        out = os.path.join(a.outdir, f"{a.gpu}-clock-{v}")
        cmd = ["/usr/bin/python3", os.path.join(HERE, "study.py"), out, "--flow-max-gpus", "0", "--sections",
               ",".join(sections), "--gpu-override", f"{gpu}.sustained_clock_ratio={v}"]
        run = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if run.returncode != 0:
            sys.exit(f"estimate.py: study.py failed for {v}:\n{run.stderr}")
        with open(os.path.join(out, "validation.csv")) as f:
            rows = [r for r in csv.DictReader(f) if r["mode"] == "analytic" and r["error_pct"] != ""
                    and r["section"] in sections]
        errs = {s: [abs(float(r["error_pct"])) for r in rows if r["section"] == s] for s in sections}
        every = [e for s in errs.values() for e in s]
        results.append((sum(every) / len(every), v, {s: sum(e) / len(e) for s, e in errs.items()},
                        sum(e > 8 for e in every), len(every)))
        per = ", ".join(f"{s} {m:.1f}" for s, m in results[-1][2].items())
        print(f"{gpu} sustained_clock_ratio {v:.3f}: mean |error| {results[-1][0]:.2f} % over {len(every)} rows "
              f"({per}); beyond 8 %: {results[-1][3]}", flush=True)
    best = min(results)
    print(f"estimate: {gpu} sustained_clock_ratio = {best[1]:.3f} (mean |error| {best[0]:.2f} %)")


if __name__ == "__main__":
    main()
