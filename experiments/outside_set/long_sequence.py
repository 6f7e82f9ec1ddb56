"""Long sequences with context parallelism: NeMo's published pre-training rates of Llama 2 7B
on DGX H100 (4K … 1M tokens, NeMo 24.03.01) and Llama 3 8B on DGX B200 (32K … 1M, NeMo
25.04.rc2), FP8, predicted with the megatron-core-0.8 stack, never fitted (study.py runs it).

Source: NVIDIA/NeMo docs/source/performance/performance_long_sequence.md (a2c4cc8ee6,
2025-05-08): per row the sequence, GPUs, global batch, TP, PP, DP, CP and TFLOP/s per GPU
"with CP". The B200 table's "# of GPUs" column repeats the H100 table's (8 … 1,024) while
its TP·PP·DP·CP give 2 … 256; the first version of the same table (14d427f575) lists 2 …
256 GPUs, so those are taken.

The unit is NeMo's own count (nemo/utils/flops_formulas.py llama2 and llama3, the formula of
NeMo's FLOPs callback): per token 12·h²·l·(1 + g/a + 1.5·f/h + s/h + V/(2·l·h)) over the
global batch, i.e. 6·(parameters) plus attention counted over all s keys (no causal
discount). The prediction is converted into that unit from the simulated iteration time,
so the comparison is between seconds. That NeMo 24.03.01 counted the H100 rows the same
way is assumed: counting only the causal half, the published rates would be twice what
any H100 attention kernel runs at 1M tokens.

Not published, and what is taken: micro-batch 1; no activation recomputation (every row fits
the memory check without it); no TP overlap (the stack's default); the stack's fp32 gradient
reduction; Transformer Engine's context parallelism as the twin lowers it (p2p ring,
load-balanced chunks, schedules/detail/context_parallel.cpp), on FlashAttention-2 for the
H100 rows and cuDNN's fused attention for the B200 rows (ATTENTION_BACKEND says why; the
catalogue's B200 rates of both are cudnn-frontend's B200 measurements).
Rows on fewer GPUs than a server (H100 4K: 4 GPUs; B200 8K and 16K: 2 and 4) run on one
server of that many GPUs of the same kind (NVSwitch, one NIC per GPU).
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# (sequence in K tokens, GPUs, global batch, TP, PP, DP, CP, published TFLOP/s per GPU)
H100_LLAMA2_7B = [(4, 4, 1024, 1, 1, 4, 1, 768), (8, 8, 512, 1, 2, 4, 1, 730), (16, 16, 256, 2, 1, 8, 1, 660),
                  (32, 32, 128, 2, 1, 8, 2, 610), (64, 64, 64, 4, 1, 8, 2, 574), (128, 128, 32, 4, 1, 8, 4, 555),
                  (256, 256, 16, 4, 1, 8, 8, 549), (512, 512, 8, 8, 1, 4, 16, 549),
                  (1024, 1024, 4, 8, 1, 4, 32, 536)]
B200_LLAMA3_8B = [(8, 2, 512, 1, 1, 2, 1, 1671), (16, 4, 256, 1, 1, 4, 1, 1717), (32, 8, 128, 1, 1, 4, 2, 1624),
                  (64, 16, 64, 1, 1, 4, 4, 1600), (128, 32, 32, 2, 1, 4, 4, 1588), (256, 64, 16, 4, 1, 4, 4, 1590),
                  (512, 128, 8, 4, 1, 4, 8, 1619), (1024, 256, 4, 4, 1, 4, 16, 1608)]
_LLAMA = dict(layers=32, hidden=4096, heads=32, mlp="swiglu", norm="rmsnorm", rotary=True, untied_embeddings=True,
              dropout=0.0)
MODELS = {  # published Llama 2 7B / Llama 3 8B dimensions
    "llama2-7b": dict(_LLAMA, kv_heads=32, ffn_hidden=11008, vocab=32000),
    "llama3-8b": dict(_LLAMA, kv_heads=8, ffn_hidden=14336, vocab=128256),
}
SERIES = [("long-seq-h100", "llama2-7b", "H100-SXM", H100_LLAMA2_7B, "NeMo 24.03.01"),
          ("long-seq-b200", "llama3-8b", "B200", B200_LLAMA3_8B, "NeMo 25.04.rc2")]
# The attention kernel each series ran (schedule.operators.attention_backend): NeMo-Framework-
# Launcher 24.03 … 24.07 set NVTE_FUSED_ATTN: 0 for every model (conf/config.yaml, "Disable
# cudnn FA until we've tested it more"; removed by 04b8d098, 2024-08-29), so the H100 rows ran
# FlashAttention-2; NeMo 25.04 sets no such variable (its performance scripts set
# NVTE_FUSED_ATTN=1, scripts/performance/executors.py) and Transformer Engine then runs cuDNN's
# fused attention on sm90 and later (dot_product_attention/utils.py, "FusedAttention
# preference on Hopper+").
ATTENTION_BACKEND = {"long-seq-h100": "flash-attn-2", "long-seq-b200": "cudnn"}


def nemo_flops(model, batch, seq):
    """nemo/utils/flops_formulas.py llama2 / llama3: FLOPs of one iteration."""
    h, l, a = model["hidden"], model["layers"], model["heads"]
    g, f, v = model["kv_heads"], model["ffn_hidden"], model["vocab"]
    return batch * seq * l * h * h * (12 + 12 * g / a + 18 * f / h + 12 * seq / h + 6 * v / (l * h))


def cluster_text(gpu, server_gpus):
    """A DGX SuperPOD of `gpu` (8 × 400 Gb/s NDR per server, rail-optimised, 1:1), with
    `server_gpus` GPUs a server (8, or fewer for a run smaller than one server)."""
    with open(os.path.join(HERE, "..", "validation", "eos.toml")) as f:
        text = f.read()
    name = f"dgx-{gpu.split('-')[0].lower()}-{server_gpus}"
    text = text.replace('model = "H100-SXM"', f'model = "{gpu}"').replace('name = "eos"', f'name = "{name}"')
    if server_gpus != 8:
        text = text.replace("gpus = 8\nnics = 8", f"gpus = {server_gpus}\nnics = {server_gpus}")
        text = text.replace("rails = 8", f"rails = {server_gpus}")
    return name + ".toml", text


def runs(series_wanted=None):
    """(series, row name, model name, model, gpu, gpus, batch, tp, pp, dp, cp, seq, published, container)."""
    for series, model_name, gpu, table, container in SERIES:
        if series_wanted and series not in series_wanted:
            continue
        for k, gpus, batch, tp, pp, dp, cp, pub in table:
            assert tp * pp * dp * cp == gpus, (series, k)
            yield (series, f"{model_name}@{k}k-tp{tp}cp{cp}", model_name, MODELS[model_name], gpu, gpus, batch, tp,
                   pp, dp, cp, k * 1024, pub, container)


def job_parallel(batch, tp, pp, dp, cp):
    """[parallel] of a long-sequence row: micro-batch 1, sequence parallelism with TP, ZeRO-1."""
    return dict(tp=tp, pp=pp, cp=cp, dp=dp, sequence_parallel=tp > 1, zero_stage=1, micro_batch=1,
                global_batch=batch)

