"""Strong scaling of GPT-175B (MegaScale and Megatron-LM forms) on megascale-ampere:
256 … 12,288 GPUs, global batch 768 below 3,072 GPUs and 6,144 from 3,072 up
(shared/reference/megascale.md, "Scale of the studies").

Modes: analytic, flow, and variation (analytic with --speed-variation, seed 1: every GPU's
speed drawn around the catalogue's, the job at its slowest GPU's pace, as the validation
experiment runs every row; docs/fidelity.md).

usage: study.py OUTDIR [--modes analytic,variation,flow] [--flow-max-gpus N] [--gpus 256,768,…]
       [--presets A,B] [--cluster C] [--small-batch 768] [--large-batch 6144]
       [--large-from 3072]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import twinscale_study as ts  # noqa: E402

# The paper's end-to-end figures (MegaScale, NSDI'24, abstract): 55.2 % MFU for the 175B
# model on 12,288 GPUs, 1.34x the MFU of Megatron-LM. Plotted for comparison only; the
# simulator is never fitted to them.
PAPER_MFU_MEGASCALE_12288 = 0.552
PAPER_MFU_RATIO_12288 = 1.34


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--modes", default="analytic")
    ap.add_argument("--flow-max-gpus", type=int, default=1 << 30, help="flow mode only up to this many GPUs")
    ap.add_argument("--gpus", default="256,768,1024,3072,6144,12288")
    ap.add_argument("--presets", default="gpt-175b-megascale,gpt-175b-megatron")
    ap.add_argument("--cluster", default="megascale-ampere")
    ap.add_argument("--small-batch", type=int, default=768)
    ap.add_argument("--large-batch", type=int, default=6144)
    ap.add_argument("--large-from", type=int, default=3072)
    ap.add_argument("--paper", action="store_true", help="mark the paper's 12,288-GPU figures on the plot")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    gpus_list = [int(g) for g in a.gpus.split(",")]
    presets = a.presets.split(",")
    modes = a.modes.split(",")

    rows = []
    ts.expect(len(modes) * len(presets) * len(gpus_list))  # progress with an ETA on a terminal
    for mode in modes:
        for preset in presets:
            for gpus in gpus_list:
                if mode == "flow" and gpus > a.flow_max_gpus:
                    continue
                batch = a.large_batch if gpus >= a.large_from else a.small_batch
                extra = ["--speed-variation"] if mode == "variation" else []
                r = ts.run_json(a.outdir, f"{preset}-{gpus}-{mode}",
                                ["simulate", "--preset", preset, "--gpus", gpus, "--global-batch", batch,
                                 "--cluster", a.cluster, "--mode", "flow" if mode == "flow" else "analytic"] + extra)
                row = {"job": preset, "mode": mode, "gpus": gpus, "global_batch": batch}
                row.update(ts.sim_row(r))
                rows.append(row)
    fields = ["job", "mode", "gpus", "global_batch", "completed"] + ts.SIM_FIELDS
    ts.write_csv(os.path.join(a.outdir, "strong_scaling.csv"), rows, fields)

    body = [[r["job"], r["mode"], f"{r['gpus']:,}", f"{r['global_batch']:,}", f"{r['iteration_time_s']:.4f}",
             f"{r['tokens_per_s']:,.0f}", f"{r['tflops_per_gpu']:.1f}", f"{100 * r['mfu']:.2f}"] for r in rows]
    print(f"strong scaling of {', '.join(presets)} on {a.cluster} (twinscale simulate)")
    print(ts.table(["job", "mode", "GPUs", "batch", "iter (s)", "tokens/s", "TFLOP/s/GPU", "MFU %"], body), end="")

    plt = ts.matplotlib_pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    for mode in modes:
        for preset in presets:
            pts = [r for r in rows if r["job"] == preset and r["mode"] == mode]
            if not pts:
                continue
            style = {"analytic": "-o", "variation": ":^"}.get(mode, "--s")
            label = f"{preset} ({mode})"
            ax1.plot([r["gpus"] for r in pts], [100 * r["mfu"] for r in pts], style, label=label)
            ax2.plot([r["gpus"] for r in pts], [r["iteration_time_s"] for r in pts], style, label=label)
    if a.paper:
        ax1.plot([12288], [100 * PAPER_MFU_MEGASCALE_12288], "k*", markersize=12,
                 label="paper: MegaScale 55.2 % (end-to-end)")
        ax1.plot([12288], [100 * PAPER_MFU_MEGASCALE_12288 / PAPER_MFU_RATIO_12288], "kx", markersize=10,
                 label="paper: Megatron-LM = 55.2 % / 1.34")
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_xticks(gpus_list)
        ax.set_xticklabels([f"{g:,}" for g in gpus_list], rotation=45)
        ax.minorticks_off()
        ax.set_xlabel("GPUs")
        ax.grid(alpha=0.3)
    ax1.set_ylabel("MFU (%)")
    ax1.set_title("MFU (batch 768 below 3,072 GPUs, 6,144 above)")
    ax2.set_ylabel("iteration time (s)")
    ax2.set_yscale("log")
    from matplotlib.ticker import FormatStrFormatter
    ax2.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax2.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
    ax2.set_title("iteration time (the batch grows 8x at 3,072 GPUs)")
    handles, labels = ax1.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=4)  # below both panels, off the lines
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    ts.save_figure(fig, os.path.join(a.outdir, "strong_scaling.png"))


if __name__ == "__main__":
    main()
