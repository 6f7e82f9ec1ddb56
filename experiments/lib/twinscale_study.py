"""Shared tooling of the experiments: run `twinscale simulate|campaign --json`, keep each
raw JSON under OUTDIR/raw/, write CSVs with fixed formatting, print tables.

Outputs are deterministic: the CLI's stdout is byte-identical for identical inputs and
seed, rows are written in the order the experiment lists them, floats with fixed digits.
Logs (the simulator's wall time) go to OUTDIR/raw/<name>.log, never into the CSVs.
"""
import csv
import json
import os
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def cli_path():
    """The twinscale binary: $TWINSCALE_CLI, else build/cli/twinscale of this tree."""
    path = os.environ.get("TWINSCALE_CLI", os.path.join(ROOT, "build", "cli", "twinscale"))
    if not os.access(path, os.X_OK):
        sys.exit(f"twinscale not found at {path}: build it first "
                 "(cmake -S . -B build -G Ninja && cmake --build build --target twinscale) or set TWINSCALE_CLI")
    return path


_planned = {"total": 0, "done": 0, "start": 0.0}


def expect(total):
    """Declares that `total` run_json calls follow: each then also shows done/total and an
    ETA on stderr when stderr is a terminal (nothing changes when it is not)."""
    _planned.update(total=total, done=0, start=time.monotonic())


def eta_text():
    """' (k/n, ETA s)' after a planned run_json call on a terminal, else ''."""
    t, d = _planned["total"], _planned["done"]
    if not t or not d or not sys.stderr.isatty():
        return ""
    el = time.monotonic() - _planned["start"]
    return f" ({d}/{t}, {el:.0f} s elapsed, ETA {el / d * max(0, t - d):.0f} s)"


def run_json(outdir, name, args):
    """Runs `twinscale ARGS --json`, stores raw/<name>.json (+ .log with stderr and wall
    time) and returns the parsed JSON. Exits with the CLI's message when it fails."""
    raw = os.path.join(outdir, "raw")
    os.makedirs(raw, exist_ok=True)
    cmd = [cli_path()] + [str(a) for a in args] + ["--json"]
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    with open(os.path.join(raw, name + ".log"), "w") as f:
        f.write(" ".join(cmd) + "\n" + p.stderr + f"wall {wall:.1f} s\n")
    # simulate exits 5 for a job that did not complete (a hang, a failure under faults): a
    # result ("completed": false, no throughput), not a failure of the experiment
    incomplete = p.returncode == 5 and str(args[0]) == "simulate"
    if p.returncode != 0 and not incomplete:
        sys.exit(f"{name}: `{' '.join(cmd)}` failed (exit {p.returncode}):\n{p.stderr}")
    with open(os.path.join(raw, name + ".json"), "w") as f:
        f.write(p.stdout)
    _planned["done"] += 1
    print(f"  {name}: {wall:.1f} s{eta_text()}", file=sys.stderr, flush=True)
    return json.loads(p.stdout)


BREAKDOWN = ["compute_s", "exposed_tp_s", "exposed_pp_s", "exposed_dp_s", "bubble_s", "idle_s"]
SIM_FIELDS = ["iteration_time_s", "tokens_per_s", "tflops_per_gpu", "mfu"] + BREAKDOWN


def sim_row(result):
    """The numbers of one `simulate --json` result, flat."""
    row = {k: result[k] for k in ["iteration_time_s", "tokens_per_s", "tflops_per_gpu", "mfu"]}
    row.update(result["breakdown"])
    row["completed"] = result["completed"]
    return row


def fmt(v):
    if v is None:  # a figure an incomplete run does not have
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.6f}"
    return str(v)


def check_outdir(path):
    """Exits with a clear message when OUTDIR exists and is not a directory (a study writes
    files under it, so it would fail part-way with a traceback)."""
    if os.path.exists(path) and not os.path.isdir(path):
        sys.exit(f"{os.path.basename(sys.argv[0])}: OUTDIR '{path}' exists and is not a directory: give a "
                 "directory (it is created when missing)")


def write_text(path, text):
    """Writes `text` to `path` atomically (a temporary file beside it, then a rename): a
    failed or interrupted run leaves the old file or none, never half of one."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_csv(path, rows, fields):
    """Writes rows (dicts) with the given columns, floats with 6 decimals, atomically."""
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(fields)
        for r in rows:
            w.writerow([fmt(r[k]) for k in fields])
    os.replace(tmp, path)


def table(header, rows):
    """Plain text table; rows are lists of strings; first column left-aligned."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    out = []
    for i, r in enumerate([header] + rows):
        cells = [str(c).ljust(w) if j == 0 else str(c).rjust(w) for j, (c, w) in enumerate(zip(r, widths))]
        out.append("  ".join(cells).rstrip())
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out) + "\n"


def save_figure(fig, path):
    """PNG without timestamps in its metadata (byte-identical reruns)."""
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=120, metadata={"Software": None})
    os.replace(tmp, path)


def matplotlib_pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt
