#!/usr/bin/env python3
"""Ground truth for slow links and jitter: the simulator injects them from a
fault plan (`simulate --faults PLAN`, analytic mode, every rank executed), `twinscale
diagnose` reads the result, and we count what was found.

slow links  One NIC uplink (server S, NIC k -> its rail-k ToR: a bad cable or optic that
            renegotiated to a lower rate) runs at `bandwidth_factor` of its bandwidth for
            the run (`kind = "link-degraded"`; `--link-window A,B`: only during [A, B) s).
            On the rail-optimised fabric only the data-parallel ring of the rank on GPU
            8S+k crosses that link (tensor-parallel traffic stays on NVLink; DP rings and
            pipeline sends stay on their rail), so the truth is that DP group.
            `--link-mode analytic` (default): one simulated step with a Chrome trace of
            every rank; `diagnose --layout` reports `slow_link` findings (a group whose
            collectives take >= 10 % longer than the same collectives of the other groups
            of its stage). A finding is right when it is that group.
            `--link-mode flow` (the way at >= 1,536 GPUs, where a trace of every rank is
            too large): one flow-mode step with link counters (`--link-csv`);
            `diagnose RANKS.csv --links LINKS.csv` reports `slow_link` findings naming a
            link (links in series that carry the same flows, a GPU's PCIe and NIC links,
            are one finding naming all). A finding is right when it names the degraded
            link.
jitter      `--jitter-ranks` ranks pause (GC-like) on random steps: on each step, each
            of them independently with probability `--jitter-p` gets a `kind = "jitter"`
            event of `delay_s` = `--jitter-delay` x its compute time per step (probability
            1 for that step: the step draws are made here, so the truth is known). The
            steps are separate simulated runs, read together by `diagnose` (per-rank
            CSVs); a jittery rank that paused at least once is found when it is reported
            as `jitter` (slow on some steps) or `straggler` (slow on most).

Every GPU also gets a per-step kernel-time noise 1 + 0.5 % N(0,1) (`--gpu-speed-file`), so
that peers are not identical. Writes OUTDIR/links.csv and OUTDIR/jitter.csv (pooled rows)
and prints the tables.
"""
import argparse
import json
import os
import random
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
import twinscale_study as ts  # noqa: E402
from study import run, progress  # noqa: E402

LINK_FIELDS = ["bandwidth_factor", "mode", "gpus", "window", "seeds", "true_pos", "false_pos", "false_neg", "precision", "recall"]
JITTER_FIELDS = ["delay_fraction", "gpus", "probability", "steps", "seeds", "jittery_ranks", "true_pos", "false_pos",
                 "false_neg", "precision", "recall"]


def shape(a):
    tp, pp = a.tp, a.pp
    return tp, pp, a.gpus // (tp * pp)


def dp_group(a, rank):
    """Members of the DP group of `rank` (Megatron's tp-dp-pp order: rank = tp + TP (dp + DP pp))."""
    tp, pp, dp = shape(a)
    t, rest = rank % tp, rank // tp
    p = rest // dp
    return sorted(t + tp * (d + dp * p) for d in range(dp))


def nic_link(gpu, gpus_per_server=8, servers_per_tor=64):
    server, k = divmod(gpu, gpus_per_server)
    return f"server{server}.nic{k}-tor{server // servers_per_tor}.r{k}#0"


def write(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def noise_file(path, gpus, rng, sigma):
    write(path, "scope,index,factor\n" + "".join(f"rank,{r},{1 + sigma * rng.gauss(0, 1):.9f}\n" for r in range(gpus)))


def simulate(a, extra, mode="analytic"):
    return run([ts.cli_path(), "simulate", a.job, "--gpus", a.gpus, "--global-batch", a.global_batch, "--mode",
                mode, "--every-rank", "--json",
                *extra])


def link_plan(link, factor, window):
    """A link-degraded event, for the run or during `window` = (at_s, until_s)."""
    text = f'[[event]]\nkind = "link-degraded"\nlink = "{link}"\nbandwidth_factor = {factor}\n'
    if window:
        text += f"at_s = {window[0]}\nuntil_s = {window[1]}\n"
    return text


def link_case(a, work, factor, seed):
    rng = random.Random(f"link:{factor}:{seed}")
    gpu = rng.randrange(a.gpus)  # linear placement: rank r on GPU r
    plan = os.path.join(work, "link-plan.toml")
    link = nic_link(gpu, servers_per_tor=a.servers_per_tor)
    write(plan, link_plan(link, factor, a.link_window))
    speeds, trace = os.path.join(work, "speeds.csv"), os.path.join(work, "link-trace.json")
    noise_file(speeds, a.gpus, random.Random(f"link-noise:{factor}:{seed}"), a.noise)
    if a.link_mode == "flow":
        ranks, links = os.path.join(work, "link-ranks.csv"), os.path.join(work, "link-loads.csv")
        simulate(a, ["--faults", plan, "--gpu-speed-file", speeds, "--per-rank-csv", ranks, "--link-csv", links], "flow")
        p = run([ts.cli_path(), "diagnose", ranks, "--links", links, "--json"], ok=(0, 4))
        found = [f for f in json.loads(p.stdout)["findings"] if f["kind"] == "slow_link" and "link" in f]
        right = sum(1 for f in found if f["link"] == link or link in f.get("detail", ""))
        return right, len(found) - right, 0 if right else 1
    simulate(a, ["--faults", plan, "--gpu-speed-file", speeds, "--trace", trace])
    tp, pp, dp = shape(a)
    p = run([ts.cli_path(), "diagnose", trace, "--layout", f"{tp}x{dp}x{pp}", "--json"], ok=(0, 4))
    found = [sorted(f["ranks"]) for f in json.loads(p.stdout)["findings"] if f["kind"] == "slow_link"]
    truth = dp_group(a, gpu)
    tp_ = sum(1 for g in found if g == truth)
    return tp_, len(found) - tp_, 0 if tp_ else 1


def jitter_case(a, work, own_s, seed):
    rng = random.Random(f"jitter:{a.jitter_delay}:{a.jitter_p}:{seed}")
    ranks = sorted(rng.sample(range(a.gpus), a.jitter_ranks))
    paused, csvs = set(), []
    for step in range(a.steps):
        events = ""
        for r in ranks:
            if rng.random() < a.jitter_p:
                paused.add(r)
                events += (f'[[event]]\nkind = "jitter"\ngpu = "server{r // 8}.gpu{r % 8}"\nprobability = 1\n'
                           f"delay_s = {a.jitter_delay * own_s[r]:.9f}\n\n")
        plan = os.path.join(work, f"jitter-plan-{step}.toml")
        write(plan, events)
        speeds = os.path.join(work, f"jitter-speeds-{step}.csv")
        noise_file(speeds, a.gpus, random.Random(f"jitter-noise:{seed}:{step}"), a.noise)
        out = os.path.join(work, f"jitter-step-{step}.csv")
        simulate(a, (["--faults", plan] if events else []) + ["--gpu-speed-file", speeds, "--per-rank-csv", out])
        csvs.append(out)
    p = run([ts.cli_path(), "diagnose", *csvs, "--json"], ok=(0, 4))
    found = {f["ranks"][0] for f in json.loads(p.stdout)["findings"] if f["kind"] in ("jitter", "straggler")}
    return len(found & paused), len(found - paused), len(paused - found), len(paused)


def plot(rows, key, label, path, title):
    """Precision and recall against the severity `key` of `rows`."""
    plt = ts.matplotlib_pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    xs = [100 * r[key] for r in rows]
    ax.plot(xs, [r["recall"] for r in rows], marker="o", label="recall")
    ax.plot(xs, [r["precision"] for r in rows], marker="x", ls="--", label="precision")
    ax.axhline(0.95, color="grey", lw=0.5, ls=":")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(label)
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    ts.save_figure(fig, path)


def rate(tp, fp, fn):
    return (tp / (tp + fp) if tp + fp else 1.0), (tp / (tp + fn) if tp + fn else 1.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--job", default=os.path.join(ts.ROOT, "presets", "jobs", "llama3-70b.toml"))
    ap.add_argument("--gpus", type=int, default=128)
    ap.add_argument("--global-batch", type=int, default=16, help="16: 4 micro-batches per pipeline, a 115 MB trace")
    ap.add_argument("--tp", type=int, default=8)
    ap.add_argument("--pp", type=int, default=4)
    ap.add_argument("--factors", default="0.5,0.75,0.9")
    ap.add_argument("--link-mode", choices=["analytic", "flow"], default="analytic",
                    help="analytic: Chrome trace and --layout; flow: link counters and --links")
    ap.add_argument("--servers-per-tor", type=int, default=32, help="the cluster's (h100-400g: 32), for link names")
    ap.add_argument("--link-window", default="", help="A,B: the link is degraded during [A, B) s only")
    ap.add_argument("--tag", default="", help="prefix of the CSV names (e.g. 1536-)")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--noise", type=float, default=0.005)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--jitter-ranks", type=int, default=4)
    ap.add_argument("--jitter-p", type=float, default=0.3)
    ap.add_argument("--jitter-delays", default="0.05,0.1,0.2", help="pause / the rank's compute time per step")
    ap.add_argument("--jitter-seeds", type=int, default=6)
    ap.add_argument("--what", default="links,jitter")
    a = ap.parse_args()
    a.link_window = tuple(float(x) for x in a.link_window.split(",")) if a.link_window else None
    os.makedirs(a.outdir, exist_ok=True)
    work = os.path.join(a.outdir, "work-links-jitter")
    os.makedirs(work, exist_ok=True)
    what = a.what.split(",")
    if "links" in what:
        rows, start = [], time.monotonic()
        factors = [float(f) for f in a.factors.split(",")]
        for i, factor in enumerate(factors):
            tp = fp = fn = 0
            for seed in range(a.seeds):
                t, f, n = link_case(a, work, factor, seed)
                tp, fp, fn = tp + t, fp + f, fn + n
                progress(i * a.seeds + seed + 1, len(factors) * a.seeds, start)
            p, r = rate(tp, fp, fn)
            rows.append({"bandwidth_factor": factor, "mode": a.link_mode, "gpus": a.gpus,
                         "window": "-".join(str(x) for x in a.link_window) if a.link_window else "run",
                         "seeds": a.seeds, "true_pos": tp, "false_pos": fp, "false_neg": fn, "precision": p,
                         "recall": r})
        ts.write_csv(os.path.join(a.outdir, a.tag + "links.csv"), rows, LINK_FIELDS)
        plot(rows, "bandwidth_factor", "link bandwidth left (%)", os.path.join(a.outdir, a.tag + "links.png"),
             f"degraded NIC link, {a.gpus} GPUs, {a.link_mode} mode, {a.seeds} seeds per point")
        print(ts.table(["link bandwidth", "seeds", "found", "wrong", "missed", "precision", "recall"],
                       [[f"{100 * r['bandwidth_factor']:.0f} %", str(r["seeds"]), str(r["true_pos"]),
                         str(r["false_pos"]), str(r["false_neg"]), f"{r['precision']:.3f}", f"{r['recall']:.3f}"]
                        for r in rows]))
    if "jitter" in what:
        speeds = os.path.join(work, "ones.csv")
        noise_file(speeds, a.gpus, random.Random(0), 0.0)
        base_csv = os.path.join(work, "base.csv")
        simulate(a, ["--gpu-speed-file", speeds, "--per-rank-csv", base_csv])
        with open(base_csv) as f:
            next(f)
            own_s = {int(c[0]): float(c[4]) + float(c[5]) for c in (line.split(",") for line in f)}
        rows, start = [], time.monotonic()
        delays = [float(d) for d in a.jitter_delays.split(",")]
        for i, delay in enumerate(delays):
            a.jitter_delay = delay
            tp = fp = fn = n = 0
            for seed in range(a.jitter_seeds):
                t, f, m, k = jitter_case(a, work, own_s, seed)
                tp, fp, fn, n = tp + t, fp + f, fn + m, n + k
                progress(i * a.jitter_seeds + seed + 1, len(delays) * a.jitter_seeds, start)
            p, r = rate(tp, fp, fn)
            rows.append({"delay_fraction": delay, "gpus": a.gpus, "probability": a.jitter_p, "steps": a.steps,
                         "seeds": a.jitter_seeds, "jittery_ranks": n, "true_pos": tp, "false_pos": fp,
                         "false_neg": fn, "precision": p, "recall": r})
        ts.write_csv(os.path.join(a.outdir, a.tag + "jitter.csv"), rows, JITTER_FIELDS)
        plot(rows, "delay_fraction", "pause / the rank's compute per step (%)",
             os.path.join(a.outdir, a.tag + "jitter.png"),
             f"jitter, {a.gpus} GPUs, {a.jitter_ranks} jittery ranks, p = {a.jitter_p}, {a.steps} steps, "
             f"{a.jitter_seeds} seeds")
        print(ts.table(["pause / step compute", "steps", "seeds", "paused ranks", "found", "wrong", "precision",
                        "recall"],
                       [[f"{100 * r['delay_fraction']:.0f} %", str(r["steps"]), str(r["seeds"]),
                         str(r["jittery_ranks"]), str(r["true_pos"]), str(r["false_pos"]), f"{r['precision']:.3f}",
                         f"{r['recall']:.3f}"] for r in rows]))


if __name__ == "__main__":
    main()
