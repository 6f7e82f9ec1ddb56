"""Fabric what-ifs (DESIGN.md) on GPT-175B in MegaScale's form: the same job on
  - 1:1 vs 2:1 oversubscribed ToR tier (8 rails),
  - 8 rails vs 4 rails vs single-rail with unsplit downlinks (1:1),
  - placement linear vs tor-aware vs random (baseline fabric),
each with the overlaps on (preset gpt-175b-megascale) and off (gpt-175b-megascale-no-overlap.toml),
in flow mode (SimGrid, contention between flows) and in the analytic mode (closed forms,
no contention between collectives) for contrast.

usage: study.py OUTDIR [--gpus 1024] [--global-batch 768] [--modes flow,analytic]
       [--seed 1] [--job-on PRESET|FILE --job-off PRESET|FILE] [--clusters a.toml,…]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import twinscale_study as ts  # noqa: E402

CLUSTERS = ["clos-1to1-8rail", "clos-2to1-8rail", "clos-1to1-4rail", "clos-1to1-single-rail"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--gpus", type=int, default=1024)
    ap.add_argument("--global-batch", type=int, default=768)
    ap.add_argument("--modes", default="flow,analytic")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--job-on", default="preset:gpt-175b-megascale")
    ap.add_argument("--job-off", default=os.path.join(HERE, "gpt-175b-megascale-no-overlap.toml"))
    ap.add_argument("--clusters", default=",".join(os.path.join(HERE, c + ".toml") for c in CLUSTERS))
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    clusters = a.clusters.split(",")
    baseline = clusters[0]

    def job_args(job):
        return ["--preset", job[len("preset:"):]] if job.startswith("preset:") else [job]

    # (cluster, placement): every fabric with linear placement, every placement on the baseline.
    scenarios = [(c, "linear") for c in clusters] + [(baseline, p) for p in ("tor-aware", "random")]
    rows = []
    ts.expect(2 * len(a.modes.split(",")) * len(scenarios))  # progress with an ETA on a terminal
    for mode in a.modes.split(","):
        for cluster, placement in scenarios:
            cname = os.path.splitext(os.path.basename(cluster))[0]
            for overlap, job in (("on", a.job_on), ("off", a.job_off)):
                r = ts.run_json(a.outdir, f"{cname}-{placement}-overlap-{overlap}-{mode}",
                                ["simulate"] + job_args(job) +
                                ["--gpus", a.gpus, "--global-batch", a.global_batch, "--cluster", cluster,
                                 "--placement", placement, "--seed", a.seed, "--mode", mode])
                row = {"cluster": cname, "placement": placement, "overlap": overlap, "mode": mode,
                       "gpus": a.gpus, "global_batch": a.global_batch}
                row.update(ts.sim_row(r))
                rows.append(row)
    fields = ["cluster", "placement", "overlap", "mode", "gpus", "global_batch", "completed"] + ts.SIM_FIELDS
    ts.write_csv(os.path.join(a.outdir, "fabric_whatif.csv"), rows, fields)

    body = []
    for r in rows:
        exposed = r["exposed_tp_s"] + r["exposed_pp_s"] + r["exposed_dp_s"]
        body.append([r["cluster"], r["placement"], r["overlap"], r["mode"], f"{r['iteration_time_s']:.4f}",
                     f"{100 * r['mfu']:.2f}", f"{r['exposed_dp_s']:.4f}", f"{r['exposed_pp_s']:.4f}",
                     f"{exposed:.4f}"])
    print(f"{a.job_on} (overlap on) / {os.path.basename(a.job_off)} (off) on {a.gpus:,} GPUs, global batch {a.global_batch:,}: fabric what-ifs")
    print(ts.table(["cluster", "placement", "overlap", "mode", "iter (s)", "MFU %", "exp DP (s)", "exp PP (s)",
                    "exposed comm (s)"], body), end="")

    plt = ts.matplotlib_pyplot()
    modes = a.modes.split(",")
    fig, axes = plt.subplots(1, len(modes), figsize=(6.5 * len(modes), 4.8), squeeze=False)
    labels = [f"{os.path.splitext(os.path.basename(c))[0]}\n{p}" for c, p in scenarios]
    for ax, mode in zip(axes[0], modes):
        for k, overlap in enumerate(("on", "off")):
            vals = [next(r["iteration_time_s"] for r in rows
                         if r["mode"] == mode and r["overlap"] == overlap and r["placement"] == p and
                         r["cluster"] == os.path.splitext(os.path.basename(c))[0]) for c, p in scenarios]
            xs = [i + (k - 0.5) * 0.38 for i in range(len(scenarios))]
            ax.bar(xs, vals, width=0.38, label=f"overlap {overlap}")
        ax.set_xticks(range(len(scenarios)))
        ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=7)
        ax.set_ylabel("iteration time (s)")
        lo = min(r["iteration_time_s"] for r in rows if r["mode"] == mode)
        ax.set_ylim(bottom=0.9 * lo)
        ax.set_title(f"{mode} mode, {a.gpus:,} GPUs, batch {a.global_batch:,}")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    ts.save_figure(fig, os.path.join(a.outdir, "fabric_whatif.png"))


if __name__ == "__main__":
    main()
