"""Recovery: effective training time ratio (ETTR) over 28 days of GPT-175B (MegaScale form)
on 12,288 GPUs under the llama3-405b fault model, with the megascale recovery preset
(two-stage checkpoints, fast diagnosis, M14–M16) vs megatron-baseline; the iteration time
comes from the simulator (`twinscale campaign` without --iteration-time). A third row runs
the full baseline: gpt-175b-megatron's own simulated iteration time with megatron-baseline.

usage: study.py OUTDIR [--gpus 12288] [--global-batch 6144] [--days 28] [--seeds 50]
       [--faults llama3-405b] [--sim-mode analytic|flow] [--cases job:recovery,…]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import twinscale_study as ts  # noqa: E402

STATES = ["training", "checkpoint_stall", "slowdown", "network_stall", "detection", "diagnosis", "replacement",
          "restart_init", "checkpoint_load", "replay"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--gpus", type=int, default=12288)
    ap.add_argument("--global-batch", type=int, default=6144)
    ap.add_argument("--days", type=float, default=28)
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--faults", default="llama3-405b")
    ap.add_argument("--sim-mode", default="analytic", choices=["analytic", "flow"])
    ap.add_argument("--cases", default="gpt-175b-megascale:megascale,gpt-175b-megascale:megatron-baseline,"
                                       "gpt-175b-megatron:megatron-baseline")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    rows = []
    ts.expect(len(a.cases.split(",")))  # progress with an ETA on a terminal
    for case in a.cases.split(","):
        job, recovery = case.split(":")
        name = f"{job}-{recovery}"
        j = ts.run_json(a.outdir, name,
                        ["campaign", "--preset", job, "--gpus", a.gpus, "--global-batch", a.global_batch,
                         "--faults", a.faults, "--recovery", recovery, "--days", a.days, "--seeds", a.seeds,
                         "--sim-mode", a.sim_mode, "--out", os.path.join(a.outdir, name)])
        src = j["iteration_time_source"]
        if src["kind"] != "simulated":
            sys.exit(f"{name}: the campaign did not take the simulated iteration time")
        r = j["result"]
        row = {"job": job, "recovery": recovery, "gpus": j["gpus"], "days": a.days, "seeds": a.seeds,
               "iteration_time_s": j["iteration_time_s"], "sim_mode": src["mode"],
               "checkpoint_interval_s": r["checkpoint_interval_s"],
               "ettr": r["ettr"]["mean"], "ettr_ci95": r["ettr"]["ci95"],
               "interruptions": r["interruptions"]["mean"], "lost_work_h": r["lost_work_s"]["mean"] / 3600,
               "recovery_median_min": r["recovery_median_s"] / 60}
        for s in STATES:
            row[s + "_h"] = r["time_by_state_s"][s]["mean"] / 3600
        rows.append(row)
    fields = ["job", "recovery", "gpus", "days", "seeds", "sim_mode", "iteration_time_s", "checkpoint_interval_s",
              "ettr", "ettr_ci95", "interruptions", "lost_work_h", "recovery_median_min"] + [s + "_h" for s in STATES]
    ts.write_csv(os.path.join(a.outdir, "recovery.csv"), rows, fields)

    body = [[r["job"], r["recovery"], f"{r['iteration_time_s']:.4f}", f"{100 * r['ettr']:.2f} ± {100 * r['ettr_ci95']:.2f}",
             f"{r['interruptions']:.1f}", f"{r['lost_work_h']:.1f}", f"{r['recovery_median_min']:.1f}",
             f"{r['training_h']:.1f}"] for r in rows]
    print(f"ETTR over {a.days:g} days, {a.gpus:,} GPUs, faults {a.faults}, {a.seeds} seeds "
          f"(iteration time simulated, {a.sim_mode} mode)")
    print(ts.table(["job", "recovery", "iter (s)", "ETTR % (±95% CI)", "interruptions", "lost work (h)",
                    "recovery median (min)", "training (h)"], body), end="")

    plt = ts.matplotlib_pyplot()
    fig, ax = plt.subplots(figsize=(9.5, 5))
    labels = [f"{r['job']}\n{r['recovery']}" for r in rows]
    bottom = [0.0] * len(rows)
    for s in STATES:
        vals = [r[s + "_h"] for r in rows]
        if max(vals) <= 0:
            continue
        ax.bar(labels, vals, bottom=bottom, label=s.replace("_", " "))
        bottom = [b + v for b, v in zip(bottom, vals)]
    for i, r in enumerate(rows):
        ax.text(i, bottom[i], f"ETTR {100 * r['ettr']:.1f} %", ha="center", va="bottom")
    ax.set_ylabel("hours (mean over seeds)")
    ax.set_title(f"{a.days:g} days on {a.gpus:,} GPUs under {a.faults}: where the time goes")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.tick_params(axis="x", labelsize=8)
    fig.tight_layout()
    ts.save_figure(fig, os.path.join(a.outdir, "recovery.png"))


if __name__ == "__main__":
    main()
