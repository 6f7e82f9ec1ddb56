"""Outside the set: published runs that are not validation rows, predicted, never fitted.
(Besides the Megatron-Core rows below: NEMO, NeMo 24.07's five rows that are not in section
F, and NEMOTRON4_PRETRAINING, Nemotron-4 340B's own pre-training at 6,144 GPUs.)

Megatron-LM's README at commit f2e5db402c (2024-07-15, Megatron-Core r0.8.0) publishes, for
GPT models on H100 (BF16, vocabulary 131,072, sequence 4,096, `--overlap-grad-reduce
--overlap-param-gather --tp-comm-overlap`):
  table   images/model_table.png: nine models, 1.7B … 462B, TP, PP, DP 48, batch, per-GPU
          TFLOP/s (counted by that commit's num_floating_point_operations);
  strong  the README text and images/strong_scaling.png: the 177B model (TP 8, PP 6) from
          96 to 4,608 GPUs at batch 1,152, "MFU from 47 % to 42 %"; the table adds 432.8
          TFLOP/s at 2,304 GPUs.
Neither states the micro-batch (1 assumed) nor the interleaving of the PP > 1 runs
(`--num-layers-per-virtual-pipeline-stage`): every PP > 1 run is predicted at each model-
chunk count v of --vpps that divides its stage evenly (Megatron-Core 0.8 has no uneven
stages) and at one layer per chunk, every PP = 1 run also at each micro-batch of --mbs
that divides its DP rank's sequences, so
the reader sees how much the unknown moves the figure. The strong-scaling series at a
fixed batch is the check of "error that does not grow with scale" on H100: its signed
error per doubling of GPUs is printed for every v.

Each run: the `megatron-core-0.8` stack (BF16: no [precision] override, fp32 gradient
reduction as Megatron-LM's arguments.py forces with --bf16), ZeRO-1 (the distributed
optimizer that --overlap-param-gather needs), sequence parallelism and Transformer
Engine's userbuffers TP overlap with TE 1.8's defaults where TP > 1 (no ub_cfg: pipeline
roles 16 SMs in 4 splits, bulk roles 16 SMs, ring-exchange roles on copy engines), on
`eos.toml` (DGX H100, 8 × 400 Gb/s NDR), analytic mode with per-GPU speed variation (as
the validation rows run).

Also NeMo's long-sequence rows with context parallelism (Llama 2 7B on H100, Llama 3 8B on
B200, 4K … 1M tokens; long_sequence.py has the source and what is assumed).

Usage: study.py OUTDIR [--rows 1.7B,177B] [--sizes 96,2304] [--vpps 2,4] [--mbs 1,2] [--no-table]
       [--no-strong] [--no-one-layer-chunks] [--no-nemo] [--no-long] [--long-max-gpus N]
Writes OUTDIR/outside_set.csv, OUTDIR/outside_set.png, OUTDIR/jobs/*.toml, OUTDIR/raw/*.
"""
import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "validation"))
import long_sequence as ls  # noqa: E402  (experiments/outside_set/long_sequence.py)
import twinscale_study as ts  # noqa: E402
from study import TE_UB_RING_EXCHANGE, job_text  # noqa: E402  (experiments/validation/study.py)

H100_BF16_PEAK = 989.4  # TFLOP/s, presets/hardware/gpus.toml (H100 SXM datasheet, dense BF16)
SEQ, VOCAB = 4096, 131072
# name, layers, hidden, heads, TP, PP, GPUs, batch, published TFLOP/s per GPU (model_table.png)
TABLE = [
    ("1.7B", 24, 2048, 16, 1, 1, 48, 192, 408.8),
    ("7.1B", 30, 4096, 32, 2, 1, 96, 192, 465.9),
    ("16B", 32, 6144, 48, 4, 1, 192, 192, 489.1),
    ("32B", 48, 7168, 56, 8, 1, 384, 192, 459.6),
    ("70B", 84, 8192, 64, 8, 2, 768, 384, 419.7),
    ("119B", 92, 10240, 80, 8, 4, 1536, 768, 420.5),
    ("177B", 96, 12288, 96, 8, 6, 2304, 1152, 432.8),
    ("314B", 96, 16384, 128, 8, 8, 3072, 1536, 474.4),
    ("462B", 112, 18432, 144, 8, 16, 6144, 3072, 459.9),
]
# the strong-scaling series: GPUs -> published TFLOP/s per GPU (None: only plotted in the
# README's figure, not stated). 47 % and 42 % are the README's rounded MFUs (± 0.5 points).
STRONG = {96: 0.47 * H100_BF16_PEAK, 144: None, 288: None, 576: None, 1152: None, 2304: 432.8, 3072: None,
          4608: 0.42 * H100_BF16_PEAK}
STRONG_MODEL = ("177B", 96, 12288, 96, 8, 6, 1152)
# NeMo 24.07's performance summary (NVIDIA/NeMo docs/source/performance/performance_summary.md,
# the table section F of the validation set takes seven rows from): its five other rows,
# FP8 on DGX H100, tokens/s per GPU. Model and settings from NeMo-Framework-Launcher@24.07
# conf/training/{gpt3/5b,gpt3/20b,nemotron/nemotron_8b,nemotron_22b,nemotron_340b}.yaml and
# the fp8 example scripts (examples/training/{gpt,nemotron}/h100/*fp8*.sh); the table's GPUs,
# batch, micro-batch, TP, PP and VP. GPT-2 BPE's 50,257 tokens padded to a multiple of
# make_vocab_size_divisible_by 128 × TP (Megatron's rule); Nemotron's 256k SentencePiece
# vocabulary (256,000) needs no padding.
_GPT = dict(seq_len=2048)  # GeLU, LayerNorm, learned positions, dropout 0.1 (the configs)
# Nemotron: squared-ReLU MLP, LayerNorm (layernorm1p), no biases, rotary (rotary_percentage
# 0.5), untied embeddings, no dropout, sequence 4,096
_NEMOTRON = dict(seq_len=4096, mlp="squared_relu", rotary=True, untied_embeddings=True, dropout=0.0, vocab=256000)
NEMO = [  # name, model, GPUs, batch, micro-batch, TP, PP, VP, schedule keys, published tokens/s/GPU
    ("gpt3-5b", dict(_GPT, layers=24, hidden=4096, heads=32, vocab=50304), 64, 2048, 4, 1, 1, 1,
     dict(grad_reduce_dtype="bf16"), 22521),  # +optim.grad_sync_dtype=bf16 (5b_fp8_8node.sh)
    ("gpt3-20b", dict(_GPT, layers=44, hidden=6144, heads=48, vocab=50432), 64, 256, 2, 2, 1, 1,
     dict(grad_reduce_dtype="bf16"), 5851),  # likewise (20b_fp8_8node.sh)
    # nemotron_8b_fp8.sh / nemotron_22b_fp8.sh set no grad_sync_dtype: the stack's fp32
    ("nemotron-8b", dict(_NEMOTRON, layers=32, hidden=4096, heads=32, ffn_hidden=16384), 64, 256, 4, 2, 1, 1,
     {}, 12701),
    ("nemotron-22b", dict(_NEMOTRON, layers=40, hidden=6144, heads=48, ffn_hidden=24576), 64, 256, 2, 2, 4, 10,
     {}, 4256),  # overlap_p2p_comm: True
    # nemotron_340b.yaml: GQA (num_query_groups 8), selective recomputation (core attention),
    # grad_sync_dtype bf16, ub_tp_comm_overlap False, overlap_p2p_comm False
    ("nemotron-340b", dict(_NEMOTRON, layers=96, hidden=18432, heads=96, kv_heads=8, ffn_hidden=73728), 128, 32, 1,
     8, 8, 12, dict(grad_reduce_dtype="bf16", recompute="selective"), 322),
]
# TP overlap (ub_tp_comm_overlap): gpt3/20b.yaml names ub_cfg_h100_h6144_tp2_mbs2_seqlen2048
# (num_sm of its bulk and pipeline roles; ring_exchange roles on copy engines); the Nemotron
# 8B and 22B configs switch it on with no ub_cfg: TE 1.8's defaults (TE_DEFAULT_UB_SMS)
# (TE 1.8 initialize_ub without ub_cfgs, module/base.py: add_ub(num_sm=16), num_splits 4 for
# the pipeline roles), also what the Megatron-Core README runs used (--tp-comm-overlap, no cfg)
TE_DEFAULT_UB_SMS = dict(TE_UB_RING_EXCHANGE, proj_fprop=16, fc2_fprop=16, qkv_dgrad=16, qkv_wgrad=16, fc1_dgrad=16,
                         fc1_wgrad=16)
NEMO_UB_SMS = {"gpt3-20b": dict(TE_UB_RING_EXCHANGE, qkv_dgrad=8, qkv_wgrad=16, fc1_dgrad=4, fc1_wgrad=16,
                                proj_fprop=16, fc2_fprop=24),
               "nemotron-8b": TE_DEFAULT_UB_SMS, "nemotron-22b": TE_DEFAULT_UB_SMS}
# nemotron-22b: overlap_p2p_comm True (the stack's default); 340B and the PP = 1 rows: False
NEMO_NO_PP_OVERLAP = {"nemotron-340b", "nemotron-340b@6144"}
# Nemotron-4 340B's own pre-training (Nemotron-4 340B Technical Report, arXiv 2406.11704,
# Table 2): its last and longest stage on 6,144 H100s, batch 2,304, 8.0 s per iteration
# (MFU 41-42 % over the stages). Layout and settings: NeMo-Framework-Launcher@24.07
# conf/training/nemotron/nemotron_340b.yaml (768 nodes, TP 8, PP 12, VP 8, micro-batch 1,
# BF16: fp8 False, selective recomputation, grad_sync_dtype bf16, no TP or PP overlap).
NEMOTRON4_PRETRAINING = ("nemotron-340b@6144",
                         dict(_NEMOTRON, layers=96, hidden=18432, heads=96, kv_heads=8, ffn_hidden=73728), 6144,
                         2304, 1, 8, 12, 8, dict(grad_reduce_dtype="bf16", recompute="selective"), 8.0)
VPPS = [1, 2, 4, 8, 16]
# published / predicted: TFLOP/s per GPU (series table, strong), tokens/s per GPU (nemo-fp8)
FIELDS = ["series", "row", "mode", "gpus", "tp", "pp", "vpp", "dp", "micro_batch", "micro_batches", "unit", "published",
          "predicted",
          "error_pct", "iteration_time_s"] + ts.BREAKDOWN


def model_flops(batch, layers, hidden):
    """Megatron-LM f2e5db402c num_floating_point_operations for these models (no GQA, no
    gated MLP, ffn 4h): 72·B·s·l·h²·(1 + s/6h + V/12lh)."""
    return 72 * batch * SEQ * layers * hidden**2 * (1 + SEQ / (6 * hidden) + VOCAB / (12 * layers * hidden))


def job(name, gpus, layers, hidden, heads, tp, pp, vpp, batch, mb=1):
    par = dict(tp=tp, pp=pp, vpp=vpp, cp=1, dp=gpus // (tp * pp), sequence_parallel=tp > 1, zero_stage=1,
               micro_batch=mb, global_batch=batch)
    # --tp-comm-overlap with TE 1.8's defaults (4 splits of the pipeline roles)
    overlap = ub_overlap(4, TE_DEFAULT_UB_SMS) if tp > 1 else None
    # Megatron-LM's own distributed optimizer keeps fp32 master weights (the stack's NeMo
    # optimizer keeps 16-bit remainders): memory only. Attention: Megatron-Core r0.8.0's
    # TEDotProductAttention leaves the backend to Transformer Engine (no --attention-backend
    # until fa0dcc4872, 2024-12), which runs cuDNN's fused attention on Hopper ("FusedAttention
    # preference on Hopper+", TE 1.4 on); the stack's FlashAttention-2 default is NeMo 24.07's.
    return job_text(name, "megatron-core-0.8", "eos.toml", gpus,
                    dict(layers=layers, hidden=hidden, heads=heads, vocab=VOCAB, seq_len=SEQ), par,
                    dict(pipeline="interleaved" if vpp > 1 else "1f1b", master_weights="fp32"), overlap,
                    operators={"attention_backend": "cudnn"},
                    comment=f"Megatron-Core r0.8.0 README run {name}: generated by experiments/outside_set/study.py")


def ub_overlap(chunks, sms):
    """[schedule.overlap] of userbuffers TP overlap: `chunks` per GEMM, the SMs of each role."""
    return dict(tp=True, tp_chunks=chunks, **{f"tp_sms_{role}": n for role, n in sms.items()})


def simulate(outdir, name, text, mode):
    """Writes job `name` (outdir/jobs/NAME.toml) and simulates it in `mode` with per-GPU
    speed variation, as validation rows run; the result JSON."""
    path = os.path.join(outdir, "jobs", name + ".toml")
    ts.write_text(path, text)
    return ts.run_json(outdir, f"{name}-{mode}", ["simulate", path, "--mode", mode, "--speed-variation"])


def result_row(r, series, row, mode, gpus, tp, pp, vpp, micro_batches, unit, published, predicted, error, mb=1):
    out = dict(series=series, row=row, mode=mode, gpus=gpus, tp=tp, pp=pp, vpp=vpp, dp=gpus // (tp * pp),
               micro_batch=mb, micro_batches=micro_batches, unit=unit, published=published, predicted=predicted,
               iteration_time_s=r["iteration_time_s"], error_pct=None if error is None else round(error, 2))
    out.update({k: r["breakdown"][k] for k in ts.BREAKDOWN})
    return out


def run_nemo(outdir, name, model, gpus, batch, mb, tp, pp, vp, schedule, published, fp8=True, mode="analytic"):
    """One NeMo 24.07 row: FP8 in tokens/s per GPU (the published unit), or (fp8 False) BF16
    in seconds per iteration."""
    dp = gpus // (tp * pp)
    par = dict(tp=tp, pp=pp, vpp=vp, cp=1, dp=dp, sequence_parallel=tp > 1, zero_stage=1, micro_batch=mb,
               global_batch=batch)
    # ub_tp_comm_overlap: True; ring-exchange moves one 1/tp chunk per step
    overlap = ub_overlap(tp, NEMO_UB_SMS[name]) if name in NEMO_UB_SMS else {}
    if name in NEMO_NO_PP_OVERLAP:
        overlap["pp"] = False
    text = job_text(f"nemo-{name}", "megatron-core-0.8", "eos.toml", gpus, model, par,
                    dict(schedule, pipeline="interleaved" if vp > 1 else "1f1b"), overlap or None,
                    precision={"gemm": "fp8"} if fp8 else None,
                    comment=f"NeMo 24.07 {name} ({'FP8' if fp8 else 'BF16'}): generated by "
                            "experiments/outside_set/study.py")
    r = simulate(outdir, f"nemo-{name}", text, mode)
    t = r["iteration_time_s"]
    if fp8:
        predicted = batch * model["seq_len"] / t / gpus
        return result_row(r, "nemo-fp8", name, mode, gpus, tp, pp, vp, batch // dp // mb, "tokens/s/GPU", published,
                          predicted, 100 * (predicted / published - 1), mb)
    # seconds per iteration: a faster prediction is a positive error, as for throughput
    return result_row(r, "nemotron4-bf16", name, mode, gpus, tp, pp, vp, batch // dp // mb, "s/iteration", published,
                      t, 100 * (published / t - 1), mb)


def run(outdir, series, row, gpus, layers, hidden, heads, tp, pp, vpp, batch, published, mode="analytic", mb=1):
    name = f"{series}-{row}@{gpus}-v{vpp}" + (f"-mb{mb}" if mb != 1 else "")
    r = simulate(outdir, name, job(name, gpus, layers, hidden, heads, tp, pp, vpp, batch, mb), mode)
    predicted = model_flops(batch, layers, hidden) / r["iteration_time_s"] / gpus / 1e12
    return result_row(r, series, row, mode, gpus, tp, pp, vpp, batch // (gpus // (tp * pp)) // mb, "TFLOP/s/GPU",
                      published, predicted, None if published is None else 100 * (predicted / published - 1), mb)


def run_long(outdir, spec, mode="analytic"):
    """One long-sequence row (long_sequence.py): TFLOP/s per GPU in NeMo's count."""
    series, row, _, model, gpu, gpus, batch, tp, pp, dp, cp, seq, published, container = spec
    cluster, text = ls.cluster_text(gpu, min(gpus, 8))
    ts.write_text(os.path.join(outdir, "jobs", cluster), text)
    name = f"{series}-{row}"
    job = job_text(name, "megatron-core-0.8", cluster, gpus, dict(model, seq_len=seq),
                   ls.job_parallel(batch, tp, pp, dp, cp), dict(pipeline="1f1b"),
                   operators={"attention_backend": ls.ATTENTION_BACKEND[series]}, precision={"gemm": "fp8"},
                   comment=f"{container} long-sequence row {row} ({gpu}): generated by experiments/outside_set/study.py")
    r = simulate(outdir, name, job, mode)
    predicted = ls.nemo_flops(model, batch, seq) / r["iteration_time_s"] / gpus / 1e12
    return result_row(r, series, row, mode, gpus, tp, pp, 1, batch // dp, "TFLOP/s/GPU (NeMo)",
                      published, predicted, 100 * (predicted / published - 1))


def long_points(rows, series):
    """(sequence in K tokens, signed error) of one long-sequence series' analytic rows."""
    return [(int(r["row"].split("@")[1].split("k")[0]), r["error_pct"]) for r in rows
            if r["series"] == series and r["mode"] == "analytic"]


def digits(row):
    """Decimals a row's published and predicted figures are printed with."""
    return 3 if row["unit"] == "s/iteration" else 1


def vpps_of(layers, pp, allowed, one_layer_chunks=True):
    """The model-chunk counts tried: those of `allowed` that divide the stage's layers,
    and (one_layer_chunks) one layer per chunk, the most a stage allows."""
    per_stage = layers // pp
    out = [v for v in allowed if (pp > 1 or v == 1) and per_stage % v == 0]
    if one_layer_chunks and pp > 1 and per_stage > 1 and per_stage not in out:
        out.append(per_stage)
    return out


def slope(points):
    """Least-squares slope of signed error (%) against log2 of the first member (GPUs, or
    the sequence length of the long-sequence rows)."""
    xs = [math.log2(g) for g, _ in points]
    ys = [e for _, e in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def plot(rows, path):
    """Analytic rows only (the flow rows are in the CSV and the printed table)."""
    rows = [r for r in rows if r["mode"] == "analytic"]
    plt = ts.matplotlib_pyplot()
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(18, 6))
    table = [r for r in rows if r["series"] in ("table", "nemo-fp8", "nemotron4-bf16")]
    names = list(dict.fromkeys(r["row"] for r in table))
    for v in sorted({r["vpp"] for r in table if r["series"] == "table"}):
        pts = [(names.index(r["row"]), r["error_pct"]) for r in table
               if r["series"] == "table" and r["vpp"] == v and r["micro_batch"] == 1]
        a.plot([p[0] for p in pts], [p[1] for p in pts], "o", label=f"Megatron-Core BF16, v = {v}")
    for mb in sorted({r["micro_batch"] for r in table if r["series"] == "table" and r["micro_batch"] > 1}):
        pts = [(names.index(r["row"]), r["error_pct"]) for r in table
               if r["series"] == "table" and r["micro_batch"] == mb]
        a.plot([p[0] for p in pts], [p[1] for p in pts], "^", label=f"Megatron-Core BF16, PP 1, micro-batch {mb}")
    nemo = [(names.index(r["row"]), r["error_pct"]) for r in table if r["series"] == "nemo-fp8"]
    if nemo:
        a.plot([p[0] for p in nemo], [p[1] for p in nemo], "s", color="k", label="NeMo 24.07 FP8")
    own = [(names.index(r["row"]), r["error_pct"]) for r in table if r["series"] == "nemotron4-bf16"]
    if own:
        a.plot([p[0] for p in own], [p[1] for p in own], "D", color="k", label="Nemotron-4 pre-training, BF16")
    a.axhline(0, color="k", lw=0.8)
    a.set_xticks(range(len(names)), names, rotation=30, fontsize=8)
    a.set_ylabel("predicted vs published throughput per GPU (%)")
    a.set_title("H100, outside the validation set")
    if table:
        a.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.27))
    strong = [r for r in rows if r["series"] == "strong"]
    for v in sorted({r["vpp"] for r in strong}):
        pts = [(r["gpus"], 100 * r["predicted"] / H100_BF16_PEAK) for r in strong if r["vpp"] == v]
        b.plot([p[0] for p in pts], [p[1] for p in pts], "-o", ms=3, label=f"predicted, v = {v}")
    if strong:
        pub = sorted((g, 100 * t / H100_BF16_PEAK) for g, t in STRONG.items() if t is not None)
        b.plot([p[0] for p in pub], [p[1] for p in pub], "kx", ms=9, mew=2, label="published")
        b.legend(fontsize=8)
    b.set_xscale("log", base=2)
    b.set_xlabel("GPUs (batch 1,152)")
    b.set_ylabel("MFU (%)")
    b.set_title("Megatron-Core 177B strong scaling (TP 8, PP 6)")
    for series in dict.fromkeys(r["series"] for r in rows if r["series"].startswith("long-seq")):
        pts = long_points(rows, series)
        label = {"long-seq-h100": "Llama 2 7B, DGX H100", "long-seq-b200": "Llama 3 8B, DGX B200"}.get(series, series)
        c.plot([p[0] for p in pts], [p[1] for p in pts], "-o", ms=4, label=label)
    c.axhline(0, color="k", lw=0.8)
    c.set_xscale("log", base=2)
    c.set_xlabel("sequence (K tokens; GPUs grow with it, context parallelism from 32K)")
    c.set_ylabel("predicted vs published TFLOP/s per GPU (%)")
    c.set_title("NeMo long sequences, FP8")
    if any(r["series"].startswith("long-seq") for r in rows):
        c.legend(fontsize=8)
    fig.tight_layout()
    ts.save_figure(fig, path)


def print_summary(rows):
    """The table of every run, the strong-scaling slopes and the long-sequence trends."""
    show = [[r["series"], r["row"], r["mode"], str(r["gpus"]), str(r["vpp"]), str(r["micro_batch"]), str(r["micro_batches"]),
             "" if r["published"] is None else f"{r['published']:.{digits(r)}f}", f"{r['predicted']:.{digits(r)}f}",
             "" if r["error_pct"] is None else f"{r['error_pct']:+.1f}", f"{r['exposed_tp_s']:.3f}",
             f"{r['exposed_dp_s']:.3f}", f"{r['bubble_s']:.3f}"] for r in rows]
    print(ts.table(["series", "row", "mode", "GPUs", "v", "mb", "m", "published", "predicted", "error %", "exp. TP s", "exp. DP s",
                    "bubble s"], show), end="")
    for v in sorted({r["vpp"] for r in rows if r["series"] == "strong"}):
        pts = [(r["gpus"], r["error_pct"]) for r in rows if r["series"] == "strong" and r["vpp"] == v
               and r["mode"] == "analytic"
               and r["error_pct"] is not None]
        if len(pts) >= 2:
            print(f"strong scaling, v = {v}: signed error {', '.join(f'{e:+.1f}' for _, e in pts)} % at "
                  f"{', '.join(str(g) for g, _ in pts)} GPUs; slope {slope(pts):+.2f} points per doubling")
    for series in dict.fromkeys(r["series"] for r in rows if r["series"].startswith("long-seq")):
        pts = long_points(rows, series)
        print(f"{series}: signed error {', '.join(f'{e:+.1f}' for _, e in pts)} % at "
              f"{', '.join(f'{k}K' for k, _ in pts)} tokens; slope {slope(pts):+.2f} points per doubling of the "
              f"sequence; mean |error| {sum(abs(e) for _, e in pts) / len(pts):.1f} %")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--rows", default="", help="table rows to run (default: all)")
    ap.add_argument("--sizes", default="", help="strong-scaling GPU counts (default: all)")
    ap.add_argument("--vpps", default=",".join(map(str, VPPS)), help="model chunks per stage to try")
    ap.add_argument("--mbs", default="1,2,4",
                    help="table rows without pipeline parallelism: micro-batch sizes to try (those that divide "
                         "the DP rank's sequences)")
    ap.add_argument("--no-one-layer-chunks", action="store_true",
                    help="table: do not add one layer per model chunk to the chunk counts tried")
    ap.add_argument("--flow-max-gpus", type=int, default=512,
                    help="also run flow mode (SimGrid) for runs of at most this many GPUs (0: none)")
    ap.add_argument("--no-table", action="store_true")
    ap.add_argument("--no-strong", action="store_true")
    ap.add_argument("--no-long", action="store_true",
                    help="skip the long-sequence rows (NeMo's Llama 2 7B on H100 and Llama 3 8B on B200 with CP)")
    ap.add_argument("--long-max-gpus", type=int, default=0,
                    help="long-sequence rows: only those of at most this many GPUs (0: all)")
    ap.add_argument("--no-nemo", action="store_true",
                    help="skip NeMo 24.07's five rows outside the set and Nemotron-4 340B's pre-training")
    a = ap.parse_args()
    vpps = [x for x in a.vpps.split(",") if x]
    if not vpps or any(not x.isdigit() or int(x) < 1 for x in vpps):
        sys.exit(f"study.py: --vpps {a.vpps!r}: valid: positive integers separated by commas, e.g. 2,4,8")
    vpps = [int(x) for x in vpps]
    mbs = [x for x in a.mbs.split(",") if x]
    if not mbs or any(not x.isdigit() or int(x) < 1 for x in mbs):
        sys.exit(f"study.py: --mbs {a.mbs!r}: valid: positive integers separated by commas, e.g. 1,2,4")
    mbs = [int(x) for x in mbs]
    wanted = [x for x in a.rows.split(",") if x]
    unknown = [x for x in wanted if x not in [t[0] for t in TABLE]]
    if unknown:
        sys.exit(f"study.py: --rows: unknown row(s) {', '.join(unknown)}; valid: {', '.join(t[0] for t in TABLE)}")
    sizes = [x for x in a.sizes.split(",") if x]
    bad = [g for g in sizes if not g.isdigit() or int(g) not in STRONG]
    if bad:
        sys.exit(f"study.py: --sizes: unknown size(s) {', '.join(bad)}; valid: {', '.join(map(str, STRONG))}")
    sizes = [int(g) for g in sizes] or list(STRONG)
    if a.long_max_gpus < 0:
        sys.exit(f"study.py: --long-max-gpus {a.long_max_gpus}: valid: 0 (every long-sequence row) or a GPU count")
    ts.check_outdir(a.outdir)
    os.makedirs(os.path.join(a.outdir, "jobs"), exist_ok=True)
    with open(os.path.join(HERE, "..", "validation", "eos.toml")) as f:
        ts.write_text(os.path.join(a.outdir, "jobs", "eos.toml"), f.read())
    rows = []

    def both_modes(fn, gpus, *args, **kw):
        """The analytic row, and the flow-mode row too at flow_max_gpus or fewer."""
        rows.append(fn(*args, **kw))
        if gpus <= a.flow_max_gpus:
            rows.append(fn(*args, **kw, mode="flow"))

    if not a.no_table:
        for name, l, h, heads, tp, pp, g, batch, pub in TABLE:
            if wanted and name not in wanted:
                continue
            for v in vpps_of(l, pp, vpps, not a.no_one_layer_chunks):
                both_modes(run, g, a.outdir, "table", name, g, l, h, heads, tp, pp, v, batch, pub)
            per_rank = batch // (g // (tp * pp))  # sequences of one DP rank
            if pp == 1:  # the micro-batch is not published either: the PP = 1 rows at each size
                for mb in (m for m in mbs if m > 1 and per_rank % m == 0):
                    both_modes(run, g, a.outdir, "table", name, g, l, h, heads, tp, pp, 1, batch, pub, mb=mb)
    if not a.no_strong:
        name, l, h, heads, tp, pp, batch = STRONG_MODEL
        for v in vpps_of(l, pp, vpps, False):
            for g in sizes:
                both_modes(run, g, a.outdir, "strong", name, g, l, h, heads, tp, pp, v, batch, STRONG[g])
    if not a.no_nemo:
        for spec in NEMO:
            both_modes(run_nemo, spec[2], a.outdir, *spec)
        both_modes(run_nemo, NEMOTRON4_PRETRAINING[2], a.outdir, *NEMOTRON4_PRETRAINING, fp8=False)
    if not a.no_long:
        for spec in ls.runs():
            if a.long_max_gpus <= 0 or spec[5] <= a.long_max_gpus:
                both_modes(run_long, spec[5], a.outdir, spec)
    ts.write_csv(os.path.join(a.outdir, "outside_set.csv"), rows, FIELDS)
    print_summary(rows)
    if rows:
        plot(rows, os.path.join(a.outdir, "outside_set.png"))


if __name__ == "__main__":
    main()
