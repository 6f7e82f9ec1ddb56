#!/usr/bin/env python3
"""This example shows twinscale's Python API, notebook style: load a job, look at its
schedule, simulate it, find a slow GPU in the per-rank times, then run weeks of training
under faults. Every call returns what the same `twinscale ... --json` command prints
(dicts and lists; tables convert to pandas where it is installed).

Run it after the README's first command (scripts/bootstrap.sh installs the module for the
python3 on PATH) or against a build: PYTHONPATH=build/python python3 examples/python_api.py
It takes a few seconds: the tiny presets run on 8 GPUs.
"""

import os
import tempfile

import twinscale

# %% The job: a preset (or a TOML file), with the CLI's --gpus / --global-batch overrides.
job = twinscale.load_job(preset="tiny-megascale")
p = job["parallel"]
print(f"job {job['name']}: tp {p['tp']} pp {p['pp']} dp {p['dp']}, cluster {job['cluster']}")

# %% Its schedule: ranks, distinct programs, ops by kind, memory per stage.
s = twinscale.schedule(preset="tiny-megascale")
print(f"schedule: {s['ranks']} ranks, {s['programs']} programs, {s['micro_batches']} micro-batches")

# %% One iteration on the analytical model and on the flow-level SimGrid model.
for mode in ("analytic", "flow"):
    r = twinscale.simulate(preset="tiny-megascale", mode=mode)
    b = r["breakdown"]
    print(f"{mode:8s} iteration {r['iteration_time_s'] * 1e3:.3f} ms, MFU {100 * r['mfu']:.2f} %; whole run "
          f"{r['makespan_s'] * 1e3:.3f} ms: bubble {b['bubble_s'] * 1e3:.3f} ms, exposed DP {b['exposed_dp_s'] * 1e3:.3f} ms")
for stage in r["per_stage"]:  # a Table: r["per_stage"].to_pandas() with pandas
    print(f"  stage {stage['stage']} (whole run): compute {stage['compute_s'] * 1e3:.3f} ms, "
          f"bubble {stage['bubble_s'] * 1e3:.3f} ms")

# %% A GPU at half speed: every rank executed at its own speed, then diagnosed.
with tempfile.TemporaryDirectory() as tmp:
    speeds = os.path.join(tmp, "speeds.csv")
    with open(speeds, "w") as f:
        f.write("scope,index,factor\nrank,3,0.5\n")
    r = twinscale.simulate(preset="tiny-megascale", mode="analytic", every_rank=True, gpu_speed_file=speeds,
                           per_rank=True)
    slowest = max(r["per_rank"], key=lambda row: row["backward_s"])
    print(f"slowest rank {slowest['rank']}: backward {slowest['backward_s'] * 1e3:.3f} ms")
    per_rank_csv = os.path.join(tmp, "per_rank.csv")
    twinscale.simulate(preset="tiny-megascale", mode="analytic", every_rank=True, gpu_speed_file=speeds,
                       per_rank_csv=per_rank_csv)
    d = twinscale.diagnose(per_rank_csv)
    for finding in d["findings"]:
        print(f"{finding['kind']}: ranks {finding['ranks']} on {finding['host']}: {finding['detail']}")

# %% Bad input raises a twinscale.Error with the CLI's message.
try:
    twinscale.simulate(preset="tiny-megascal")
except twinscale.InputError as e:
    print(f"{type(e).__name__}: {str(e)[:70]}...")

# %% Two days of training under the default fault model and MegaScale's recovery.
c = twinscale.campaign(preset="tiny-megascale", days=2, seeds=2)
ettr = c["result"]["ettr"]
print(f"campaign: ETTR {ettr['mean']:.4f} ± {ettr['ci95']:.4f} over {c['seeds']} seeds")
