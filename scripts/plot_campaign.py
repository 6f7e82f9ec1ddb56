#!/usr/bin/env python3
"""Plots for `twinscale campaign` and `twinscale tune-checkpoint`.

  plot_campaign.py --states campaign_states.csv --out DIR   -> DIR/campaign_states.png
  plot_campaign.py --sweep tune_checkpoint.csv --out DIR    -> DIR/ettr_vs_interval.png

The CSVs are written by the CLI (columns documented in cli/detail/fault_report.hpp).
Exits 3 with a message if matplotlib is not installed (the CSVs stay usable), 4 if a
PNG cannot be written (no partial PNG or temporary file is left).
"""
import argparse
import csv
import os
import sys

from plot_output import save  # the scripts' folder is on sys.path when run as a script



def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def plot_states(plt, path, out_dir):
    rows = read_csv(path)
    names = [r["state"] for r in rows]
    hours = [float(r["hours_mean"]) for r in rows]
    err = [float(r["hours_ci95"]) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.barh(names, hours, xerr=err, color="#4c72b0")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("hours per run (mean, 95% CI over seeds)")
    ax.set_title("Time by state")
    ax.invert_yaxis()
    fig.tight_layout()
    target = os.path.join(out_dir, "campaign_states.png")
    save(fig, target, dpi=120)
    print(f"wrote {target}", file=sys.stderr)


def plot_sweep(plt, path, out_dir):
    rows = read_csv(path)
    x = [float(r["interval_s"]) for r in rows]
    y = [float(r["ettr_mean"]) for r in rows]
    e = [float(r["ettr_ci95"]) for r in rows]
    d = [float(r["daly_model_ettr"]) for r in rows]
    band = [r["in_band"] == "1" for r in rows]
    young = float(rows[0]["young_s"])
    daly = float(rows[0]["daly_s"])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.errorbar(x, y, yerr=e, marker="o", capsize=3, label="simulated ETTR (95% CI)")
    ax.plot(x, d, linestyle="--", color="gray", label="Daly's model (R = simulated mean recovery)")
    bx = [xi for xi, b in zip(x, band) if b]
    if bx:
        ax.axvspan(min(bx), max(bx), color="#55a868", alpha=0.2, label="optimum band (paired seeds)")
    ax.axvline(young, color="#c44e52", linestyle=":", label=f"Young {young:.0f} s")
    ax.axvline(daly, color="#8172b2", linestyle="-.", label=f"Daly {daly:.0f} s")
    ax.set_xscale("log")
    ax.set_xlabel("checkpoint interval (s of training)")
    ax.set_ylabel("ETTR")
    ax.legend(fontsize=8)
    ax.set_title("ETTR vs checkpoint interval")
    fig.tight_layout()
    target = os.path.join(out_dir, "ettr_vs_interval.png")
    save(fig, target, dpi=120)
    print(f"wrote {target}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--states")
    ap.add_argument("--sweep")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_campaign.py: matplotlib is not installed; no PNG written (CSVs are in "
              f"{args.out})", file=sys.stderr)
        return 3
    if args.states:
        plot_states(plt, args.states, args.out)
    if args.sweep:
        plot_sweep(plt, args.sweep, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
