"""Checks the order-statistic shortcut of --speed-variation against executing every rank.

--speed-variation scales the one executed pipeline by the job's slowest GPU factor
(sim/speed_variation.hpp); --every-rank --gpu-speed-dist normal:SIGMA executes every rank
at its own drawn speed. The two use different random streams, so they are compared as
means over seeds: the shortcut must stay within 2 % of the full execution.

Usage: python3 experiments/validation/variation_check.py OUTDIR [--rows 18.4B,39.1B] [--seeds 8]
Needs OUTDIR/jobs/<row>.toml from study.py (run.sh writes them). Writes
OUTDIR/variation_check.csv (row,gpus,seeds,nominal_s,order_statistic_s,every_rank_s,diff_pct)
and prints it; exits 1 when a row differs by more than 2 %.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import twinscale_study as ts  # noqa: E402

SIGMA = 0.013  # speed_sigma of A100-SXM-80GB in presets/hardware/gpus.toml
FIELDS = ["row", "gpus", "seeds", "nominal_s", "order_statistic_s", "every_rank_s", "diff_pct"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--rows", default="18.4B,39.1B")
    ap.add_argument("--seeds", type=int, default=8)
    a = ap.parse_args()
    out = []
    for row in a.rows.split(","):
        job = os.path.join(a.outdir, "jobs", f"{row}.toml")
        if not os.path.exists(job):
            sys.exit(f"{job}: not found; run experiments/validation/run.sh {a.outdir} first")
        base = ts.run_json(a.outdir, f"var-{row}-nominal", ["simulate", job, "--mode", "analytic"])
        order, every = 0.0, 0.0
        for seed in range(1, a.seeds + 1):
            order += ts.run_json(a.outdir, f"var-{row}-os-{seed}",
                                 ["simulate", job, "--mode", "analytic", "--speed-variation", "--seed", seed])[
                "iteration_time_s"] / a.seeds
            every += ts.run_json(a.outdir, f"var-{row}-er-{seed}",
                                 ["simulate", job, "--mode", "analytic", "--every-rank", "--gpu-speed-dist",
                                  f"normal:{SIGMA}", "--speed-seed", seed])["iteration_time_s"] / a.seeds
        out.append({"row": row, "gpus": base["gpus"] if "gpus" in base else "", "seeds": a.seeds,
                    "nominal_s": round(base["iteration_time_s"], 4), "order_statistic_s": round(order, 4),
                    "every_rank_s": round(every, 4), "diff_pct": round(100 * (order / every - 1), 2)})
    ts.write_csv(os.path.join(a.outdir, "variation_check.csv"), out, FIELDS)
    print(ts.table(FIELDS, [[str(r[k]) for k in FIELDS] for r in out]))
    bad = [r for r in out if abs(r["diff_pct"]) > 2]
    if bad:
        sys.exit(f"order statistic beyond 2 % of every-rank execution: {', '.join(r['row'] for r in bad)}")


if __name__ == "__main__":
    main()
