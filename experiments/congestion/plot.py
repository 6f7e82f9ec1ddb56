"""congestion.png from the CSVs of experiments/congestion/run.sh (needs matplotlib)."""
import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import twinscale_study as ts  # noqa: E402


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main(out):
    try:
        plt = ts.matplotlib_pyplot()
    except ImportError:
        print("matplotlib not installed: no PNG")
        return
    join = rows(os.path.join(out, "join.csv"))
    cases = rows(os.path.join(out, "cases.csv"))
    study = rows(os.path.join(out, "default_study.csv"))
    ccs = ["none", "dcqcn", "swift", "hybrid"]
    fig, ax = plt.subplots(1, 3, figsize=(16, 4.5))
    for cc in ccs:
        r = [x for x in join if x["controller"] == cc]
        t = [float(x["t_ms"]) for x in r]
        ax[0].plot(t, [float(x["rate0_gbit_s"]) for x in r], label=cc + " flow 0")
        ax[0].plot(t, [float(x["rate1_gbit_s"]) for x in r], "--", label=cc + " flow 1 (joins at 5 ms)")
    ax[0].set_xlabel("time (ms)")
    ax[0].set_ylabel("sending rate (Gb/s)")
    ax[0].set_title("a flow joins a running one (200 Gb/s bottleneck)")
    ax[0].legend(fontsize=6)
    for cc in ccs:
        r = [x for x in cases if x["case"] == "incast" and x["controller"] == cc]
        ax[1].plot([int(x["n"]) for x in r], [max(float(x["queue_kb"]), 1e-3) for x in r], "o-", label=cc)
    ax[1].set_xscale("log", base=2)
    ax[1].set_yscale("log")
    ax[1].set_xlabel("incast senders N")
    ax[1].set_ylabel("standing queue (KB)")
    ax[1].set_title("N:1 incast: bottleneck queue")
    ax[1].legend()
    names = [x["controller"] for x in study]
    base = float(next(x for x in study if x["controller"] == "none")["iteration_time_s"])
    ax[2].bar(names, [100 * (float(x["iteration_time_s"]) / base - 1) for x in study])
    ax[2].set_ylabel("iteration time vs none (%)")
    ax[2].set_title("GPT-175B, %s GPUs, flow mode (none: %.4f s)" % (study[0]["gpus"], base))
    fig.tight_layout()
    ts.save_figure(fig, os.path.join(out, "congestion.png"))
    print("wrote", os.path.join(out, "congestion.png"))


if __name__ == "__main__":
    main(sys.argv[1])
