"""Default study: GPT-175B in MegaScale's and in Megatron-LM's form on 12,288 GPUs of
megascale-ampere (global batch 6,144), simulated, printed side by side.

usage: study.py OUTDIR [--mode flow|analytic] [--gpus N] [--global-batch B]
       [--presets A,B] [--cluster C]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import twinscale_study as ts  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--mode", default="flow", choices=["flow", "analytic"])
    ap.add_argument("--gpus", type=int, default=12288)
    ap.add_argument("--global-batch", type=int, default=6144)
    ap.add_argument("--presets", default="gpt-175b-megascale,gpt-175b-megatron")
    ap.add_argument("--cluster", default="megascale-ampere")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    presets = a.presets.split(",")
    results = []
    for p in presets:
        r = ts.run_json(a.outdir, f"{p}-{a.mode}", ["simulate", "--preset", p, "--gpus", a.gpus,
                                                      "--global-batch", a.global_batch, "--cluster", a.cluster,
                                                      "--mode", a.mode])
        results.append(r)

    rows = []
    for p, r in zip(presets, results):
        row = {"job": p, "gpus": r["gpus"], "global_batch": a.global_batch, "cluster": a.cluster, "mode": r["mode"]}
        row.update(ts.sim_row(r))
        rows.append(row)
    ts.write_csv(os.path.join(a.outdir, "default_study.csv"), rows,
                 ["job", "gpus", "global_batch", "cluster", "mode", "completed"] + ts.SIM_FIELDS)

    # Side by side: one column per job.
    labels = [("iteration time (s)", "iteration_time_s", "{:.4f}"), ("tokens/s", "tokens_per_s", "{:,.0f}"),
              ("TFLOP/s per GPU", "tflops_per_gpu", "{:.1f}"), ("MFU (%)", "mfu", "{:.2f}")]
    body = []
    for name, key, f in labels:
        v = [row[key] * (100 if key == "mfu" else 1) for row in rows]
        body.append([name] + [f.format(x) for x in v])
    for key, name in zip(ts.BREAKDOWN, ["compute", "exposed TP comm", "exposed PP comm", "exposed DP comm",
                                         "pipeline bubble", "idle"]):
        body.append([f"  {name} (s, %)"] +
                    [f"{row[key]:.4f} ({100 * row[key] / row['iteration_time_s']:.1f} %)" for row in rows])
    print(f"{' vs '.join(presets)} on {a.gpus:,} GPUs of {a.cluster}, global batch {a.global_batch:,}, "
          f"{a.mode} mode (twinscale simulate)")
    print(ts.table(["metric"] + presets, body), end="")
    if len(rows) == 2 and rows[1]["mfu"] > 0:
        print(f"MFU ratio {presets[0]} / {presets[1]}: {rows[0]['mfu'] / rows[1]['mfu']:.3f}")

    plt = ts.matplotlib_pyplot()
    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    bottom = [0.0] * len(rows)
    for key in ts.BREAKDOWN:
        vals = [row[key] for row in rows]
        ax.bar(presets, vals, bottom=bottom, label=key[:-2].replace("_", " "))
        bottom = [b + v for b, v in zip(bottom, vals)]
    for i, row in enumerate(rows):
        ax.text(i, bottom[i], f"MFU {100 * row['mfu']:.1f} %", ha="center", va="bottom")
    ax.set_ylabel("seconds per iteration (average rank)")
    ax.set_title(f"{a.gpus:,} GPUs of {a.cluster}, batch {a.global_batch:,} ({a.mode} mode)")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    ts.save_figure(fig, os.path.join(a.outdir, "default_study.png"))


if __name__ == "__main__":
    main()
