#!/usr/bin/env python3
"""Plots of a `twinscale sweep` results store, from the CSV `twinscale sweep show DB --plot DIR`
writes (columns documented in study/report.hpp):

  plot_sweep.py DIR/sweep.csv --out DIR  -> DIR/sweep_pareto.png  (MFU vs memory per GPU,
                                            feasible points, the Pareto front joined)
                                         -> DIR/sweep_axes.png    (MFU by value of each axis:
                                            every feasible point, the best per value marked)

Exits 3 with a message if matplotlib is not installed (the CSV stays usable), 4 if a PNG
cannot be written (no partial PNG or temporary file is left).
"""
import argparse
import csv
import os
import sys

from plot_output import save  # the scripts' folder is on sys.path when run as a script

FIXED = {"id", "status", "reason", "gpus", "tp", "cp", "ep", "pp", "vpp", "dp", "micro_batch", "global_batch",
         "memory_gb", "gpu_memory_gb", "ops", "mode", "iteration_time_s", "tokens_per_s", "tflops_per_gpu", "mfu",
         "compute_s", "exposed_tp_s", "exposed_ep_s", "exposed_pp_s", "exposed_dp_s", "bubble_s", "flow_status",
         "flow_iteration_time_s", "flow_mfu", "flow_exposed_dp_s", "ettr", "ettr_ci95", "interruptions",
         "lost_work_h", "twinscale_version"}



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_sweep.py: matplotlib is not installed (Debian: python3-matplotlib)", file=sys.stderr)
        sys.exit(3)
    with open(a.csv, newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames
        rows = list(reader)
    ok = [r for r in rows if r["status"] == "ok"]
    # The axes are the columns between id and status (axis_<name>), in the store's order.
    axes = header[1:header.index("status")]
    if not ok:
        print("plot_sweep.py: no feasible point to plot", file=sys.stderr)
        return
    plt.rcParams["svg.hashsalt"] = "twinscale"  # deterministic output

    fig, ax = plt.subplots(figsize=(7, 4.5))
    mem = [float(r["memory_gb"]) for r in ok]
    mfu = [100 * float(r["mfu"]) for r in ok]
    ax.scatter(mem, mfu, s=10, alpha=0.5, label=f"feasible points ({len(ok)})")
    front, best = [], -1.0
    for m, u in sorted(zip(mem, mfu), key=lambda t: (t[0], -t[1])):
        if u > best:
            front.append((m, u))
            best = u
    ax.plot([m for m, _ in front], [u for _, u in front], "r-o", markersize=4, label="Pareto front")
    flow = [(float(r["memory_gb"]), 100 * float(r["flow_mfu"])) for r in ok if r.get("flow_status") == "ok"]
    if flow:
        ax.plot([m for m, _ in flow], [u for _, u in flow], "k*", markersize=10, label="flow mode (best points)")
    ax.set_xlabel("memory per GPU, largest stage (GB)")
    ax.set_ylabel("MFU (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, os.path.join(a.out, "sweep_pareto.png"), dpi=120, metadata={"Software": None})

    if axes:
        cols = min(3, len(axes))
        nrows = (len(axes) + cols - 1) // cols
        fig, axs = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.2 * nrows), squeeze=False)
        for k, name in enumerate(axes):
            axp = axs[k // cols][k % cols]
            values = []
            for r in rows:
                if r[name] not in values:
                    values.append(r[name])
            for i, v in enumerate(values):
                ys = [100 * float(r["mfu"]) for r in ok if r[name] == v]
                axp.scatter([i] * len(ys), ys, s=8, alpha=0.4)
                if ys:
                    axp.plot([i], [max(ys)], "r_", markersize=18, mew=2)
            axp.set_xticks(range(len(values)))
            axp.set_xticklabels(values, rotation=30, fontsize=8)
            axp.set_title(name.removeprefix("axis_"), fontsize=9)
            axp.set_ylabel("MFU (%)", fontsize=8)
            axp.grid(alpha=0.3)
        for k in range(len(axes), nrows * cols):
            axs[k // cols][k % cols].axis("off")
        fig.tight_layout()
        save(fig, os.path.join(a.out, "sweep_axes.png"), dpi=110, metadata={"Software": None})


if __name__ == "__main__":
    main()
