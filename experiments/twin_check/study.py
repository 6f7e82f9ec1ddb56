#!/usr/bin/env python3
"""twin_check: probe configuration A, simulate configuration B, run B, compare (run.sh)."""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import twinscale_study as ts  # noqa: E402

MODEL = {"layers": 4, "hidden": 256, "heads": 8, "seq_len": 128, "vocab": 1024}
# Per rank count: A (probed) and B (predicted, then run): another pp/dp split and another
# number of micro-batches per pipeline (global_batch / dp with micro_batch 1).
CONFIGS = {
    2: ({"pp": 2, "dp": 1, "global_batch": 4}, {"pp": 1, "dp": 2, "global_batch": 6}),
    4: ({"pp": 2, "dp": 2, "global_batch": 8}, {"pp": 4, "dp": 1, "global_batch": 6}),
    8: ({"pp": 2, "dp": 4, "global_batch": 16}, {"pp": 4, "dp": 2, "global_batch": 12}),
}


def job_toml(name, par):
    m = "\n".join(f"{k} = {v}" for k, v in MODEL.items())
    return (f'name = "{name}"\ncluster = "tiny-2tier"\n[model]\n{m}\n[parallel]\ntp = 1\n'
            f'pp = {par["pp"]}\ndp = {par["dp"]}\nmicro_batch = 1\nglobal_batch = {par["global_batch"]}\n'
            '[schedule]\npipeline = "1f1b"\niterations = 1\n')


def sh(args, log):
    with open(log, "w") as f:
        r = subprocess.run(args, stdout=subprocess.PIPE, stderr=f, text=True)
    if r.returncode != 0:
        sys.exit(f"twin_check: {' '.join(args)} failed ({r.returncode}); see {log}")
    return r.stdout


def mpirun(n):
    # MPIRUN_ARGS: extra launcher options for probe and run alike (e.g. "--bind-to none").
    cmd = ["mpirun", "--oversubscribe", *os.environ.get("MPIRUN_ARGS", "").split(), "-np", str(n)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    return cmd


def one(cli, raw, n, rep):
    a, b = CONFIGS[n]
    d = os.path.join(raw, f"n{n}-r{rep}")
    os.makedirs(d, exist_ok=True)
    ja, jb = os.path.join(d, "a.toml"), os.path.join(d, "b.toml")
    with open(ja, "w") as f:
        f.write(job_toml(f"twin-a{n}", a))
    with open(jb, "w") as f:
        f.write(job_toml(f"twin-b{n}", b))
    cal, host = os.path.join(d, "cal.json"), os.path.join(d, "host.toml")
    with open(os.path.join(d, "sweep.txt"), "w") as f:
        f.write(sh(mpirun(n) + [cli, "probe", ja, "--out", cal, "--cluster-out", host], os.path.join(d, "probe.log")))
    sim = json.loads(sh([cli, "simulate", jb, "--cluster", host, "--calibration", cal, "--no-aggregate", "--json",
                         "--trace", os.path.join(d, "sim.json")], os.path.join(d, "simulate.log")))
    sh(mpirun(n) + [cli, "run", jb, "--timeout", "300", "--trace", os.path.join(d, "run.json")],
       os.path.join(d, "run.log"))
    cmp = json.loads(sh([cli, "compare", os.path.join(d, "run.json"), os.path.join(d, "sim.json"), "--json"],
                        os.path.join(d, "compare.log")))
    with open("/proc/loadavg") as f:
        load = float(f.read().split()[0])
    err = (cmp["b"]["span_s"] - cmp["a"]["span_s"]) / cmp["a"]["span_s"]
    rows = [{"ranks": n, "rep": rep, "kind": "iteration", "ops": cmp["matched"], "real_s": cmp["a"]["span_s"],
             "sim_s": cmp["b"]["span_s"], "error": err, "op_error": err,
             "coverage_ops": sim["calibration_coverage"]["op_share"],
             "coverage_time": sim["calibration_coverage"]["time_share"], "load1": load}]
    # error: compare's per-kind median |error| (a collective from its last member's start,
    # docs/backend.md "Compare"); op_error: from each op's own start (waits for peers included).
    for k in cmp["kinds"]:
        rows.append({"ranks": n, "rep": rep, "kind": k["kind"], "ops": k["ops"], "real_s": k["a_mean_s"],
                     "sim_s": k["b_mean_s"], "error": k["median_abs_rel_error"],
                     "op_error": k.get("op_median_abs_rel_error", k["median_abs_rel_error"]), "coverage_ops": "",
                     "coverage_time": "", "load1": load})
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--ranks", default="2 4 8")
    p.add_argument("--repetitions", type=int, default=3)
    args = p.parse_args()
    cli = ts.cli_path()
    raw = os.path.join(args.out, "raw")
    os.makedirs(raw, exist_ok=True)
    ncpu = os.cpu_count() or 1
    rows = []
    for n in [int(x) for x in args.ranks.split()]:
        if n not in CONFIGS:
            sys.exit(f"twin_check: --ranks {n}: valid rank counts are {sorted(CONFIGS)}")
        for rep in range(args.repetitions):
            rows += one(cli, raw, n, rep)
    fields = ["ranks", "rep", "kind", "ops", "real_s", "sim_s", "error", "op_error", "coverage_ops", "coverage_time",
              "load1", "oversubscribed"]
    for r in rows:
        r["oversubscribed"] = int(r["ranks"] > ncpu)
    path = os.path.join(args.out, "twin_check.csv")
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    os.replace(path + ".tmp", path)
    # Summary: medians over the repetitions. iteration: signed error of B's iteration time;
    # other kinds: the median |error| of their ops.
    summary = {}
    for r in rows:
        summary.setdefault((r["ranks"], r["kind"]), []).append(r)
    print(f"twin_check on {ncpu} CPUs, {args.repetitions} repetitions, medians (A probed, B predicted then run)")
    print(f"{'ranks':>5} {'kind':<16} {'real s':>12} {'sim s':>12} {'error':>9} {'coverage':>9} {'with waits':>10}")
    plot = {}
    for (n, kind), rs in sorted(summary.items(), key=lambda x: (x[0][0], x[0][1] != "iteration", x[0][1])):
        err = statistics.median(r["error"] for r in rs)
        cov = ""
        if kind == "iteration":
            cov = f"{100 * statistics.median(r['coverage_ops'] for r in rs):.1f}%"
        over = " (oversubscribed)" if n > ncpu and kind == "iteration" else ""
        waits = statistics.median(r["op_error"] for r in rs)
        waits = f"{100 * waits:>+9.2f}%" if kind != "iteration" and waits != err else ""
        print(f"{n:>5} {kind:<16} {statistics.median(r['real_s'] for r in rs):>12.6f} "
              f"{statistics.median(r['sim_s'] for r in rs):>12.6f} {100 * err:>+8.2f}% {cov:>9} {waits:>10}{over}")
        plot.setdefault(kind, {})[n] = err
    plt = ts.matplotlib_pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.5))
    kinds = sorted(plot, key=lambda k: (k != "iteration", k))
    ranks = sorted({n for k in plot.values() for n in k})
    width = 0.8 / max(1, len(ranks))
    for i, n in enumerate(ranks):
        ys = [100 * abs(plot[k].get(n, float("nan"))) for k in kinds]
        label = f"{n} ranks" + (" (oversubscribed)" if n > ncpu else "")
        ax.bar([x + i * width for x in range(len(kinds))], ys, width, label=label)
    ax.axhline(10, color="k", ls="--", lw=0.8, label="iteration target 10 %")
    ax.axhline(15, color="gray", ls=":", lw=0.8, label="per-kind target 15 %")
    ax.set_xticks([x + width * (len(ranks) - 1) / 2 for x in range(len(kinds))])
    ax.set_xticklabels(kinds, rotation=20)
    ax.set_ylabel("|error| %, median of repetitions")
    ax.set_title("twin_check: probe A → simulate B → run B (iteration: |B span error|; kinds: median |op error|)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    png = os.path.join(args.out, "twin_check.png")
    fig.savefig(png + ".tmp.png", dpi=110)
    os.replace(png + ".tmp.png", png)
    print(f"wrote {path} and {png}")


if __name__ == "__main__":
    main()
