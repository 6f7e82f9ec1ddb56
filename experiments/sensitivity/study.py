"""Sensitivity: how far each micro-level fact's published range moves a prediction.

The catalogue states one value for each hardware figure, with its source; several sources
give a range instead of a point (a span of measurements, a "typically 70–90 %"). This
study runs published runs at full scale, the catalogue's values first, then each ranged
fact at both ends of its range, one at a time, then every fact at its slow end together
and at its fast end together (the envelope). It says how much of each run's error against
its published figure lies within the uncertainty of the facts, and which fact dominates.
Nothing is fitted: the catalogue is unchanged, the ends are the sources' own.

Runs (published figure; its source):
  gpt175b-megascale  GPT-175B, MegaScale's form, 12,288 A100 (megascale-ampere):
                     55.2 % MFU (MegaScale, NSDI'24, arXiv 2402.15627, abstract)
  gpt175b-megatron   the same in Megatron-LM's form: ≈ 41.2 % MFU (derived: the abstract's
                     55.2 % is "1.34× the MFU of Megatron-LM"; not quoted)
  nemotron4-340b     Nemotron-4 340B pre-training, 6,144 H100 (h100-400g): 8.0 s per
                     iteration (arXiv 2406.11704, Table 2)
  llama3-405b        Llama 3 405B, 16,384 H100 (h100-400g): 400 TFLOP/s per GPU (arXiv
                     2407.21783, Table 4); the preset's 4 model chunks per stage are its own
                     choice (not published)
Each: `twinscale simulate --preset JOB --cluster FILE --mode analytic --speed-variation`
(the validation rows' setting), FILE the job's cluster preset with the varied figures
written into its [gpu] or [server] table (docs/keys.md, "Cluster files"). The unmodified
copy must reproduce the preset's own run to the last digit (checked for every job).

Usage: study.py OUTDIR [--jobs gpt175b-megascale,...] [--facts gemm_max_efficiency,...]
Writes OUTDIR/sensitivity.csv, OUTDIR/sensitivity.png, OUTDIR/clusters/*.toml, OUTDIR/raw/*.
"""
import argparse
import os
import subprocess
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "validation"))
import twinscale_study as ts  # noqa: E402
from study import ESTIMATED_CLOCKS  # noqa: E402  (experiments/validation/study.py)

# name, job preset, metric ("mfu" %, "tflops" per GPU, "iteration" s), published, source
JOBS = [
    ("gpt175b-megascale", "gpt-175b-megascale", "mfu", 55.2, "MegaScale (arXiv 2402.15627), abstract"),
    ("gpt175b-megatron", "gpt-175b-megatron", "mfu", 55.2 / 1.34,
     "derived: MegaScale's 55.2 % is 1.34x Megatron-LM's (abstract)"),
    ("nemotron4-340b", "nemotron4-340b", "iteration", 8.0, "Nemotron-4 340B report (arXiv 2406.11704), Table 2"),
    ("llama3-405b", "llama3-405b", "tflops", 400.0, "Llama 3 (arXiv 2407.21783), Table 4"),
]

# Ranged facts per GPU model: table of the cluster file, key, slow end, fast end (the end
# that makes the run slower first), source of the range. The sustained clocks' bounds are
# those of the validation set's estimated parameters (experiments/validation/study.py).
def clock(name, source):
    _, low, high, _, _ = ESTIMATED_CLOCKS[name]
    return ("gpu", "sustained_clock_ratio", low, high, source)


def gemm(catalogue):
    """hardware.md's generic range of a large BF16 GEMM; `catalogue`: where the GPU's own
    figure sits in it."""
    return ("gpu", "gemm_max_efficiency", 0.70, 0.90,
            f"hardware.md: large BF16 cuBLAS GEMMs reach 70-90 % of peak (the catalogue's {catalogue})")


A100 = [
    clock("A100", "gpus.toml: the estimated parameter's bounds, NVIDIA's HPL Rpeak clock at the 400 W limit "
                  "(1,305 of 1,410 MHz) and the boost clock"),
    gemm("0.85: the best shape measured, 85.9 %"),
    ("gpu", "flash_fwd_efficiency", 0.50, 0.73, "gpus.toml: FlashAttention-2 forward on A100, 50-73 % of peak (Dao 2023)"),
    ("gpu", "nvlink_efficiency", 220 / 300, 232 / 300, "hardware.md: 8 x A100 all-reduce busbw 220-232 GB/s of 300"),
]
H100 = [
    clock("H100", "gpus.toml: the estimated parameter's bounds, the span of its sources (Nsight Compute's "
                  "1,780 of 1,980 MHz; mamf-finder's sustained MSMF; HPL Rpeak)"),
    gemm("0.80: 794.5 of 989 TFLOP/s measured"),
    ("gpu", "flash_fwd_efficiency", 298 / 989.4, 333 / 989.4,
     "gpus.toml: FlashAttention-2 forward on H100, 298-333 TFLOP/s at sequence 2k-8k"),
    ("server", "nic_efficiency", 0.92, 0.96, "hardware.md: 46-48 GB/s NCCL busbw per NDR NIC of 50"),
]
FACTS = {"A100-SXM-80GB": A100, "H100-SXM": H100}
FACT_KEYS = sorted({f[1] for facts in FACTS.values() for f in facts})

UNITS = {"mfu": "% MFU", "tflops": "TFLOP/s per GPU", "iteration": "s per iteration"}
FIELDS = ["job", "gpu", "variant", "overrides", "iteration_time_s", "metric", "predicted", "published",
          "error_pct", "mfu", "compute_s", "exposed_tp_s", "exposed_dp_s", "bubble_s"]


def preset_text(kind, name):
    p = subprocess.run([ts.cli_path(), "preset", "show", "--kind", kind, name], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"study.py: `twinscale preset show --kind {kind} {name}` failed:\n{p.stderr}")
    return p.stdout


def with_overrides(cluster_text, overrides):
    """The cluster file with `key = value` lines added at the top of their tables."""
    out = cluster_text
    for table in sorted({t for t, _, _ in overrides}):
        header = f"[{table}]\n"
        if out.count(header) != 1:
            sys.exit(f"study.py: the cluster preset has {out.count(header)} '[{table}]' tables, expected one")
        lines = "".join(f"{k} = {v!r}\n" for t, k, v in overrides if t == table)
        out = out.replace(header, header + lines)
    return out


def error_pct(metric, predicted, published):
    """Positive: the model is faster than the run (as the validation set signs it)."""
    if metric == "iteration":
        return 100 * (published / predicted - 1)
    return 100 * (predicted / published - 1)


def run_variant(outdir, job, gpu, cluster_text, variant, overrides):
    name, preset, metric, published, _ = job
    path = os.path.join(outdir, "clusters", f"{name}-{variant}.toml")
    ts.write_text(path, with_overrides(cluster_text, overrides))
    r = ts.run_json(outdir, f"{name}-{variant}", ["simulate", "--preset", preset, "--cluster", path, "--mode",
                                                   "analytic", "--speed-variation"])
    predicted = {"mfu": 100 * r["mfu"], "tflops": r["tflops_per_gpu"], "iteration": r["iteration_time_s"]}[metric]
    b = r["breakdown"]
    return {"job": name, "gpu": gpu, "variant": variant,
            "overrides": " ".join(f"{t}.{k}={v:.4g}" for t, k, v in overrides),
            "iteration_time_s": r["iteration_time_s"], "metric": metric, "predicted": predicted,
            "published": published, "error_pct": error_pct(metric, predicted, published), "mfu": r["mfu"],
            "compute_s": b["compute_s"], "exposed_tp_s": b["exposed_tp_s"], "exposed_dp_s": b["exposed_dp_s"],
            "bubble_s": b["bubble_s"]}


def job_setup(job, keys):
    """The job's cluster preset (its text), its GPU model and the facts of `keys` it has."""
    name, preset, _, _, _ = job
    spec = tomllib.loads(preset_text("jobs", preset))
    cluster_text = preset_text("clusters", spec["cluster"])
    gpu = tomllib.loads(cluster_text)["gpu"]["model"]
    if gpu not in FACTS:
        sys.exit(f"study.py: {name}: no ranged facts for GPU model {gpu!r}; known: {', '.join(FACTS)}")
    return cluster_text, gpu, [f for f in FACTS[gpu] if f[1] in keys]


def runs_of(facts):
    """simulate runs of one job: the catalogue's, the preset's own, two per fact, the envelope."""
    return 2 + 2 * len(facts) + (2 if len(facts) > 1 else 0)


def study_job(outdir, job, setup):
    name, preset, _, _, _ = job
    cluster_text, gpu, facts = setup
    rows = [run_variant(outdir, job, gpu, cluster_text, "catalogue", [])]
    own = ts.run_json(outdir, f"{name}-preset", ["simulate", "--preset", preset, "--mode", "analytic",
                                                 "--speed-variation"])
    if own["iteration_time_s"] != rows[0]["iteration_time_s"]:
        sys.exit(f"study.py: {name}: the copied cluster file gives {rows[0]['iteration_time_s']} s, the preset "
                 f"{own['iteration_time_s']} s: the copy is not faithful")
    for table, key, slow, fast, _ in facts:
        rows.append(run_variant(outdir, job, gpu, cluster_text, f"{key}-slow", [(table, key, slow)]))
        rows.append(run_variant(outdir, job, gpu, cluster_text, f"{key}-fast", [(table, key, fast)]))
    if len(facts) > 1:
        rows.append(run_variant(outdir, job, gpu, cluster_text, "all-slow", [(t, k, lo) for t, k, lo, _, _ in facts]))
        rows.append(run_variant(outdir, job, gpu, cluster_text, "all-fast", [(t, k, hi) for t, k, _, hi, _ in facts]))
    return rows


def summary(rows, facts, job):
    """Printed lines: the error at the catalogue's values, each fact's swing, the envelope."""
    name, _, metric, published, source = job
    by = {r["variant"]: r for r in rows if r["job"] == name}
    base = by["catalogue"]
    unit = UNITS[metric]
    out = [f"{name}: published {published:.2f} {unit} ({source}); predicted {base['predicted']:.2f}, "
           f"error {base['error_pct']:+.1f} %"]
    table = []
    for _, key, slow, fast, _ in facts:
        lo, hi = by[f"{key}-slow"]["error_pct"], by[f"{key}-fast"]["error_pct"]
        covers = "yes" if min(lo, hi) <= 0 <= max(lo, hi) else ""
        table.append([key, f"{slow:.3f} .. {fast:.3f}", f"{lo:+.1f}", f"{hi:+.1f}", f"{hi - lo:.1f}", covers])
    out.append(ts.table(["fact", "range", "error at slow end %", "at fast end %", "swing, points",
                         "published inside"], table).rstrip("\n"))
    if "all-slow" in by:
        lo, hi = by["all-slow"]["error_pct"], by["all-fast"]["error_pct"]
        inside = "inside" if lo <= 0 <= hi else "outside"
        out.append(f"  envelope (every fact at its slow end / fast end): {lo:+.1f} … {hi:+.1f} %: the published "
                   f"figure is {inside} it")
    return "\n".join(out)


def plot(rows, jobs, facts_of, path):
    plt = ts.matplotlib_pyplot()
    fig, axes = plt.subplots(len(jobs), 1, figsize=(9, 1.2 + 1.5 * len(jobs)), squeeze=False)
    for ax, job in zip(axes[:, 0], jobs):
        name = job[0]
        by = {r["variant"]: r for r in rows if r["job"] == name}
        labels = [f[1] for f in facts_of[name]] + (["all facts"] if "all-slow" in by else [])
        for i, label in enumerate(labels):
            v = "all" if label == "all facts" else label
            lo, hi = by[f"{v}-slow"]["error_pct"], by[f"{v}-fast"]["error_pct"]
            ax.plot([lo, hi], [i, i], "-", lw=7, color="C1" if label == "all facts" else "C0", solid_capstyle="butt")
        ax.axvline(by["catalogue"]["error_pct"], color="C3", lw=1.5, label="catalogue's values")
        ax.axvline(0, color="k", lw=0.8, label="published")
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.set_title(f"{name} (published {job[3]:.4g} {UNITS[job[2]]})", fontsize=9)
        ax.set_xlabel("predicted vs published (%; + = model faster)", fontsize=8)
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    ts.save_figure(fig, path)


def parse_list(text, valid, what):
    wanted = [x for x in text.split(",") if x]
    unknown = [x for x in wanted if x not in valid]
    if unknown:
        sys.exit(f"study.py: --{what}: unknown {', '.join(unknown)}; valid: {', '.join(valid)}")
    return wanted or list(valid)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--jobs", default="", help="runs to study (default: all)")
    ap.add_argument("--facts", default="", help="ranged facts to vary (default: all)")
    a = ap.parse_args()
    names = parse_list(a.jobs, [j[0] for j in JOBS], "jobs")
    keys = parse_list(a.facts, FACT_KEYS, "facts")
    jobs = [j for j in JOBS if j[0] in names]
    ts.check_outdir(a.outdir)
    setups = {job[0]: job_setup(job, keys) for job in jobs}
    os.makedirs(os.path.join(a.outdir, "clusters"), exist_ok=True)
    ts.expect(sum(runs_of(facts) for _, _, facts in setups.values()))
    rows, facts_of = [], {}
    for job in jobs:
        rows += study_job(a.outdir, job, setups[job[0]])
        facts_of[job[0]] = setups[job[0]][2]
    ts.write_csv(os.path.join(a.outdir, "sensitivity.csv"), rows, FIELDS)
    for job in jobs:
        print(summary(rows, facts_of[job[0]], job))
    plot(rows, jobs, facts_of, os.path.join(a.outdir, "sensitivity.png"))


if __name__ == "__main__":
    main()
