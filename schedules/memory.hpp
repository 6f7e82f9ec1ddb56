// Parameter counts and memory per pipeline stage (per rank of that stage).
#pragma once

#include <cstdint>

#include "schedules/job.hpp"
#include "schedules/schedule.hpp"

namespace twinscale::schedules {

/// Parameters held by one TP rank for model chunk `chunk` of pipeline rank `pp_rank`
/// (layers of virtual stage chunk·pp + pp_rank, plus the embedding on the first virtual
/// stage and the tied LM head + final LayerNorm on the last).
double chunk_parameters(const JobSpec& job, int64_t pp_rank, int64_t chunk);
/// Of those, the final LayerNorm's and the LM head's (the last virtual stage only; a tied
/// head is a copy of the embedding when the model spans more than one virtual stage).
double head_parameters(const JobSpec& job, int64_t virtual_stage);
/// Of those, the routed experts' parameters (MoE layers; reduced over the expert data-
/// parallel group rather than the data-parallel one).
double chunk_expert_parameters(const JobSpec& job, int64_t pp_rank, int64_t chunk);
/// The routed experts' parameters of global layer `layer` held by one rank (0 if dense).
double layer_expert_parameters(const JobSpec& job, int64_t layer);
/// Parameters of global layer `layer` held by one rank (its routed experts included).
double layer_parameter_count(const JobSpec& job, int64_t layer);
/// Sum of chunk_parameters over the rank's chunks.
double stage_parameters(const JobSpec& job, int64_t pp_rank);

/// Memory of one rank of pipeline stage `pp_rank`:
///  - parameters: BF16 (2 B/param);
///  - gradients: the main gradients in the DP reduction's type (BF16 2 B/param, FP32 4 B
///    with schedule.grad_reduce_dtype = "fp32"; ZeRO-3: BF16), divided by dp for ZeRO stages 2 and 3 (routed experts
///    by their holders, tp·dp/ep); ZeRO-3 also shards the parameters and adds the
///    gathered layers (1 + schedule.fsdp_prefetch) and one layer's gradients;
///  - optimizer: FP32 master weights + two moments (12 B/param; Adam and LAMB alike),
///    divided by dp for ZeRO stages 1 and 2;
///  - activations (Korthikanti et al., MLSys'23, Table 2): per layer and micro-batch
///    s·b·h·(34/t + 5·a·keys/(h·t)) with sequence parallelism, s·b·h·(10 + 24/t +
///    5·a·keys/(h·t)) without; FlashAttention-2 and selective recomputation remove the
///    5·a·keys/(h·t) term (no stored scores); keys = s (dense) or the window (sliding). Full recomputation
///    stores only each layer's BF16 input plus one layer's full activations. Multiplied
///    by the most forward passes in flight on that rank (from the pipeline order), plus
///    one micro-batch of FP32 logits on the last stage. FP8 GEMMs (Transformer Engine)
///    save the FP8 copies of the layer GEMMs' inputs for the weight gradient: 1 B per
///    element instead of 2 for the QKV, projection, FC1 and FC2 inputs (and the experts'
///    FC1 and FC2 inputs), and add the FP8 weight copies to the parameters.
MemoryEstimate estimate_memory(const JobSpec& job, int64_t pp_rank);

} // namespace twinscale::schedules
