#include "schedules/memory.hpp"

#include <algorithm>
#include <vector>

#include "schedules/pipeline.hpp"
#include "schedules/stage_layers.hpp"

namespace twinscale::schedules {

namespace {
double one_expert_parameters(const JobSpec& job) { // an expert MLP without biases
  const double h = static_cast<double>(job.model.hidden);
  const double fm = static_cast<double>(job.model.expert_ffn());
  return h * (job.model.mlp == MlpKind::SwiGlu ? 2 * fm : fm) + fm * h;
}

double layer_parameters(const JobSpec& job, int64_t layer) {
  const double h = static_cast<double>(job.model.hidden);
  const double f = static_cast<double>(job.model.ffn_hidden);
  const double t = static_cast<double>(job.parallel.tp);
  const double qkv = h + 2 * static_cast<double>(job.model.kv() * (job.model.hidden / job.model.heads));
  const double fc1 = job.model.mlp == MlpKind::SwiGlu ? 2 * f : f;
  const double norms = job.model.norm == NormKind::RmsNorm ? 2 * h : 4 * h; // RMSNorm: no bias
  // QKV (h·qkv + qkv; qkv = 3h without grouped-query attention) and FC1 (h·fc1 + fc1)
  // column-parallel, projection (h²) and FC2 (f·h) row-parallel with replicated biases
  // (h each), two LayerNorms (4h) or RMSNorms (2h) replicated.
  if (!job.model.is_moe_layer(layer)) return (h * qkv + qkv + h * fc1 + fc1 + h * h + f * h) / t + 2 * h + norms;
  // MoE: the router (h·experts, replicated), shared experts TP-split like the dense MLP,
  // and the rank's experts/ep routed experts whole (not split over TP).
  const double experts = static_cast<double>(job.model.experts);
  const double shared = static_cast<double>(job.model.shared_experts);
  return (h * qkv + qkv + h * h) / t + h + norms + h * experts + shared * one_expert_parameters(job) / t +
         layer_expert_parameters(job, layer);
}

LayerRange chunk_layers(const JobSpec& job, int64_t pp_rank, int64_t chunk) {
  return stage_layers(job, chunk * job.parallel.pp + pp_rank);
}
} // namespace

double layer_parameter_count(const JobSpec& job, int64_t layer) { return layer_parameters(job, layer); }

double layer_expert_parameters(const JobSpec& job, int64_t layer) {
  if (!job.model.is_moe_layer(layer)) return 0;
  return static_cast<double>(job.model.experts / job.parallel.ep) * one_expert_parameters(job);
}

double chunk_expert_parameters(const JobSpec& job, int64_t pp_rank, int64_t chunk) {
  const LayerRange r = chunk_layers(job, pp_rank, chunk);
  double n = 0;
  for (int64_t l = r.first; l < r.first + r.count; ++l) n += layer_expert_parameters(job, l);
  return n;
}

double chunk_parameters(const JobSpec& job, int64_t pp_rank, int64_t chunk) {
  const int64_t pp = job.parallel.pp;
  const int64_t virtual_stage = chunk * pp + pp_rank;
  const LayerRange r = chunk_layers(job, pp_rank, chunk);
  double n = 0;
  if (job.model.experts == 0) {
    n = static_cast<double>(r.count) * layer_parameters(job, 0);
  } else {
    for (int64_t l = r.first; l < r.first + r.count; ++l) n += layer_parameters(job, l);
  }
  const double h = static_cast<double>(job.model.hidden);
  const double embedding = static_cast<double>(job.model.vocab) / static_cast<double>(job.parallel.tp) * h;
  if (virtual_stage == 0) // learned positions: a seq_len × h table (none with rotary embeddings)
    n += embedding + (job.model.rotary ? 0.0 : static_cast<double>(job.model.seq_len) * h);
  return n + head_parameters(job, virtual_stage);
}

double head_parameters(const JobSpec& job, int64_t virtual_stage) {
  const int64_t stages = job.parallel.pp * job.parallel.vpp;
  if (virtual_stage != stages - 1) return 0;
  const double h = static_cast<double>(job.model.hidden);
  double n = 2 * h; // final LayerNorm
  if (stages > 1 || job.model.untied_embeddings)
    n += static_cast<double>(job.model.vocab) / static_cast<double>(job.parallel.tp) * h; // LM head (tied: a copy)
  return n;
}

double stage_parameters(const JobSpec& job, int64_t pp_rank) {
  double n = 0;
  for (int64_t c = 0; c < job.parallel.vpp; ++c) n += chunk_parameters(job, pp_rank, c);
  return n;
}

namespace {
/// FP8 GEMMs (Transformer Engine): what a layer's saved GEMM inputs take less per
/// micro-batch. TE saves for the weight gradient the FP8 copy of each FP8 GEMM's input
/// (1 B per element) instead of its BF16 input (2 B): transformer_engine/pytorch/module/
/// linear.py (_Linear.forward saves inputmat / inputmat_t, the cast FP8 tensor, unless
/// the recipe overrides the wgrad precision), layernorm_linear.py (ln_out in FP8) and
/// layernorm_mlp.py (ln_out and the activation output, FC2's input, in FP8). With
/// sequence parallelism the saved input of QKV and FC1 is the FP8 local shard (the
/// backward re-gathers it, as schedules/detail/fp8.cpp lowers). Q, K, V, the attention's
/// own tensors, norms, dropout masks and FC1's output stay BF16.
struct Fp8Saving {
  double attention = 0; // QKV and projection inputs
  double mlp = 0;       // a dense layer's FC1 and FC2 inputs
  double moe = 0;       // a MoE layer's routed (and shared) experts' FC1 and FC2 inputs
};

Fp8Saving fp8_saving(const JobSpec& job, double s, bool sp) {
  Fp8Saving f;
  if (!job.options.fp8()) return f;
  const auto& m = job.model;
  const double b = static_cast<double>(job.parallel.micro_batch);
  const double t = static_cast<double>(job.parallel.tp);
  const double h = static_cast<double>(m.hidden);
  const double replicated = sp ? t : 1; // QKV's and FC1's input: the shard with SP, else whole
  f.attention = s * b * (h / replicated + h / t);
  f.mlp = s * b * (h / replicated + static_cast<double>(m.ffn_hidden) / t);
  if (m.experts > 0) { // as mean_layer_activations counts the MoE layer
    const double local = s * b / t;
    const double fm = static_cast<double>(m.expert_ffn());
    f.moe = local * static_cast<double>(m.top_k) * (h + fm) + static_cast<double>(m.shared_experts) * s * b * fm / t;
  }
  return f;
}

/// What a dense layer keeps for its backward per micro-batch (bytes), in Korthikanti et al.
/// 2022's accounting (§4.1) written over the model's own tensors, so that it holds for
/// grouped-query attention, SwiGLU and no dropout as for GPT (where it is their
/// s·b·h·(34/t) with sequence parallelism, s·b·h·(10 + 24/t) without, plus the scores):
///  - each block's norm input (2 B an element) and its GEMM input (the norm's output: QKV's,
///    FC1's), whole on every TP rank without sequence parallelism, split with it;
///  - attention: Q, K and V (K and V of kv_heads), the attention output (the projection's
///    input), split over TP; without FlashAttention (and without selective recomputation)
///    the softmax output, and with dropout its mask (1 B) and output, a·s·keys each;
///  - MLP: GeLU's input and output (f wide each); SwiGLU's FC1 output (gate and up, 2f) and
///    the product (FC2's input, f), plus silu's output (f) when the activation runs as
///    separate kernels (operators.fused_gelu = false: eager PyTorch keeps every
///    intermediate its autograd needs);
///  - with dropout, the mask (1 B) after the projection and after FC2.
/// For GPT (MHA, f = 4h, dropout > 0) that is 4 + 11 + 19 = 34 s·b·h, Korthikanti's figure.
struct LayerActivations {
  double attention = 0; // norm input, attention block, its dropout mask (and scores)
  double mlp = 0;       // norm input, MLP block, its dropout mask
  double total() const { return attention + mlp; }
};

LayerActivations layer_activations(const JobSpec& job, double s, double b, bool sp) {
  const auto& m = job.model;
  const double sbh = s * b * static_cast<double>(m.hidden);
  const double t = static_cast<double>(job.parallel.tp);
  const double whole = sp ? t : 1; // what TP does not split unless sequence parallelism does
  const double h = static_cast<double>(m.hidden);
  const double a = static_cast<double>(m.heads);
  const double kv = static_cast<double>(m.kv()) / a; // K and V width over h
  const double f = static_cast<double>(m.ffn_hidden) / h;
  const double mask = m.dropout > 0 ? 1.0 : 0.0;
  const double keys = m.attention == AttentionKind::Sliding ? static_cast<double>(std::min(m.window, m.seq_len))
                                                            : static_cast<double>(m.seq_len);
  // Selective recomputation keeps no score-sized activations (Korthikanti et al. 2022, §4).
  const bool no_scores = job.options.operators.flash_attention || job.options.selective_recompute;
  const double scores = no_scores ? 0.0 : (2 + 3 * mask) * a * keys / (h * t);
  LayerActivations l;
  l.attention = sbh * ((2 + 2 + mask) / whole + (2 + 4 * kv + 2) / t + scores);
  double mlp = 4 * f; // GeLU: its input and output
  if (m.mlp == MlpKind::SwiGlu) mlp = job.options.operators.fused_gelu ? 6 * f : 8 * f;
  l.mlp = sbh * ((2 + 2 + mask) / whole + mlp / t);
  return l;
}

/// Mean activation bytes per layer of the stage when some layers are MoE layers: a MoE
/// layer stores, instead of the dense MLP block (layer_activations), the router
/// probabilities (fp32) and per routed token its input, FC1 output, activation and
/// expert output (bf16), for the busiest rank's share of balanced routing, plus the
/// shared experts' FC1 output and activation split over TP. `dense_layer` is a dense
/// layer's BF16 figure; FP8 takes `fp8` off each kind of layer.
double mean_layer_activations(const JobSpec& job, int64_t pp_rank, const LayerActivations& dense_layer,
                              const Fp8Saving& fp8) {
  const auto& m = job.model;
  const auto& p = job.parallel;
  const double t = static_cast<double>(p.tp);
  const double tokens = static_cast<double>(p.micro_batch * m.seq_len);
  const double local = tokens / t; // MoE with tp > 1 needs sequence parallelism
  const double h = static_cast<double>(m.hidden);
  const double fm = static_cast<double>(m.expert_ffn());
  const double fc1m = m.mlp == MlpKind::SwiGlu ? 2 * fm : fm;
  const double routed = local * static_cast<double>(m.top_k);
  // the MLP block's norm input stays (split: MoE with tp > 1 needs sequence parallelism)
  const double moe = dense_layer.attention + 2 * local * h + 4 * local * static_cast<double>(m.experts) +
                     routed * 2 * (2 * h + fc1m + fm) +
                     static_cast<double>(m.shared_experts) * tokens * 2 * (fc1m + fm) / t - fp8.attention - fp8.moe;
  const double dense = dense_layer.total() - fp8.attention - fp8.mlp;
  double sum = 0;
  int64_t count = 0;
  for (int64_t c = 0; c < p.vpp; ++c) {
    const LayerRange r = chunk_layers(job, pp_rank, c);
    for (int64_t l = r.first; l < r.first + r.count; ++l, ++count) sum += m.is_moe_layer(l) ? moe : dense;
  }
  return count > 0 ? sum / static_cast<double>(count) : dense;
}
/// The most activation bytes rank `pp_rank` holds at once: over its passes in pipeline
/// order, what the forward passes whose backward has not run keep (each by its own
/// chunk's layers: uneven first and last stages hold fewer), and with ZB-H1 what the
/// B-done passes whose W has not run keep for the weight gradients (the four GEMMs'
/// inputs and output gradients, wgrad_layer a layer). With recomputation the recomputed
/// layers (every one, or every n-th: ⌈layers / n⌉ of a chunk) keep only their input (and
/// what the policy saves), the others everything, and a recomputed layer's own
/// activations exist once more, during its backward. `s` is the rank's tokens of a
/// sequence (seq_len / cp), `b` the micro-batch.
double activation_bytes(const JobSpec& job, int64_t pp_rank, double s, double b) {
  const auto& p = job.parallel;
  const auto& m = job.model;
  const double h = static_cast<double>(m.hidden);
  const double a = static_cast<double>(m.heads);
  const double t = static_cast<double>(p.tp);
  const bool sp = p.sequence_parallel && p.tp > 1;
  const LayerActivations dense = layer_activations(job, s, b, sp);
  const Fp8Saving fp8 = fp8_saving(job, s, sp); // zero without FP8 GEMMs
  const double per_layer =
      m.experts > 0 ? mean_layer_activations(job, pp_rank, dense, fp8) : dense.total() - fp8.attention - fp8.mlp;
  const double f = static_cast<double>(m.ffn_hidden);
  const double fc1 = m.mlp == MlpKind::SwiGlu ? 2 * f : f;
  const double qkv = h + 2 * static_cast<double>(m.kv()) * (h / a);
  // (FP8: the GEMMs' inputs are kept as their FP8 copies, 1 B per element)
  const double wgrad_layer =
      2 * s * b * (2 * h / (sp ? t : 1) + h / t + f / t + qkv / t + h + fc1 / t + h) - fp8.attention - fp8.mlp;
  double kept = 2 * s * b * h / (sp ? t : 1); // a recomputed layer's input
  if (job.options.recompute_saves_alternate_matmuls) {
    // torchtitan's per-op policy also keeps the attention output (and its softmax
    // statistics, fp32 per head and token) and the 1st, 3rd … matmul's output (tp = 1)
    const double kv = static_cast<double>(m.kv()) * (h / a);
    const std::vector<double> widths = job.options.operators.fused_qkv ? std::vector<double>{qkv, h, fc1, h}
                                                                       : std::vector<double>{h, kv, kv, h, f, f, h};
    kept += 2 * s * b * h + 4 * s * b * a;
    for (size_t i = 0; i < widths.size(); i += 2) kept += 2 * s * b * widths[i];
  }
  const int64_t every = job.options.recompute_every;
  const auto pass_bytes = [&](int64_t layers) { // one forward pass of a chunk of `layers`
    if (!job.options.recompute) return static_cast<double>(layers) * per_layer;
    const double recomputed = static_cast<double>((layers + every - 1) / every);
    return recomputed * kept + (static_cast<double>(layers) - recomputed) * per_layer;
  };
  std::vector<int64_t> chunk_count(static_cast<size_t>(p.vpp));
  for (int64_t c = 0; c < p.vpp; ++c) chunk_count[static_cast<size_t>(c)] = chunk_layers(job, pp_rank, c).count;
  double held = 0;
  double peak = 0;
  for (const auto& step : pipeline_order(job.options.pipeline, p.pp, p.vpp, p.micro_batches(), pp_rank)) {
    const int64_t layers = chunk_count[static_cast<size_t>(step.chunk)];
    if (step.weight)
      held -= static_cast<double>(layers) * wgrad_layer;
    else if (step.forward)
      held += pass_bytes(layers);
    else {
      held -= pass_bytes(layers);
      if (job.options.pipeline == PipelineKind::ZeroBubbleH1) held += static_cast<double>(layers) * wgrad_layer;
    }
    peak = std::max(peak, held);
  }
  return peak + (job.options.recompute ? per_layer : 0.0);
}
} // namespace

MemoryEstimate estimate_memory(const JobSpec& job, int64_t pp_rank) {
  const auto& p = job.parallel;
  const auto& m = job.model;
  MemoryEstimate mem;
  const double n = stage_parameters(job, pp_rank);
  double experts = 0; // routed experts: sharded over their own holders (the expert-DP group)
  for (int64_t c = 0; c < p.vpp; ++c) experts += chunk_expert_parameters(job, pp_rank, c);
  const double dp = static_cast<double>(p.dp_cp()); // the distributed optimizer shards over dp·cp
  const double edp = static_cast<double>(p.expert_dp());
  const double sharded = (n - experts) / dp + experts / edp;
  mem.parameters_bytes = 2 * n;
  // main gradients in the reduction's type: Megatron's fp32 main_grad buffer with fp32
  // reduction (--bf16, --accumulate-allreduce-grads-in-fp32), 16-bit otherwise
  const double grad_bytes = job.options.grad_reduce_fp32 ? 4 : 2;
  mem.gradients_bytes = p.zero_stage >= 2 ? grad_bytes * sharded : grad_bytes * n;
  // Adam's two fp32 moments and the master weights (fp32, or the 16-bit remainders of
  // fp32 beside the bf16 weights: ScheduleOptions::master_weights)
  const double optimizer = 8 + (job.options.master_weights == MasterWeights::Fp32 ? 4 : 2);
  mem.optimizer_bytes = p.zero_stage >= 1 ? optimizer * sharded : optimizer * n;
  if (p.zero_stage == 3) { // sharded parameters plus the gathered layers and one layer's gradients
    double largest = 0;
    for (int64_t c = 0; c < p.vpp; ++c) {
      const LayerRange r = chunk_layers(job, pp_rank, c);
      for (int64_t l = r.first; l < r.first + r.count; ++l) largest = std::max(largest, layer_parameters(job, l));
    }
    const double gathered = 1 + static_cast<double>(job.options.fsdp_prefetch);
    mem.parameters_bytes = 2 * sharded + 2 * gathered * largest;
    mem.gradients_bytes = 2 * sharded + 2 * largest;
  }
  if (job.options.fp8()) {
    // Transformer Engine keeps an FP8 copy of every FP8 GEMM weight and its transpose (1 + 1
    // bytes per parameter), cast on the first micro-batch and reused (schedules/detail/
    // fp8.cpp); counted over the transformer layers' parameters (their norms and the MoE
    // router, under 0.1 %, included). ZeRO-3: only the gathered layers have copies.
    double layer_params = 0, largest = 0;
    for (int64_t c = 0; c < p.vpp; ++c) {
      const LayerRange r = chunk_layers(job, pp_rank, c);
      for (int64_t l = r.first; l < r.first + r.count; ++l) {
        layer_params += layer_parameters(job, l);
        largest = std::max(largest, layer_parameters(job, l));
      }
    }
    if (p.zero_stage == 3) layer_params = (1 + static_cast<double>(job.options.fsdp_prefetch)) * largest;
    mem.parameters_bytes += 2 * layer_params;
  }

  // context parallelism: each rank keeps the activations of its seq_len / cp tokens
  const double s = static_cast<double>(m.seq_len / p.cp);
  const double b = static_cast<double>(p.micro_batch);
  const double t = static_cast<double>(p.tp);
  mem.activations_bytes = activation_bytes(job, pp_rank, s, b);
  if (pp_rank == p.pp - 1) mem.activations_bytes += s * b * static_cast<double>(m.vocab) / t * 4;
  return mem;
}

} // namespace twinscale::schedules
