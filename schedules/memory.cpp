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
  const int64_t vpp = job.parallel.vpp;
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
  if (virtual_stage == pp * vpp - 1) {
    n += 2 * h;                                                      // final LayerNorm
    if (pp * vpp > 1 || job.model.untied_embeddings) n += embedding; // LM head (tied: a copy)
  }
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

/// Mean activation bytes per layer of the stage when some layers are MoE layers: a MoE
/// layer stores, instead of the dense MLP's 19·s·b·h/t (Korthikanti et al.), the router
/// probabilities (fp32) and per routed token its input, FC1 output, activation and
/// expert output (bf16), for the busiest rank's share of balanced routing, plus the
/// shared experts' FC1 output and activation split over TP. `dense_layer` is a dense
/// layer's BF16 figure; FP8 takes `fp8` off each kind of layer.
double mean_layer_activations(const JobSpec& job, int64_t pp_rank, double dense_layer, const Fp8Saving& fp8) {
  const auto& m = job.model;
  const auto& p = job.parallel;
  const double t = static_cast<double>(p.tp);
  const double tokens = static_cast<double>(p.micro_batch * m.seq_len);
  const double local = tokens / t; // MoE with tp > 1 needs sequence parallelism
  const double h = static_cast<double>(m.hidden);
  const double fm = static_cast<double>(m.expert_ffn());
  const double fc1m = m.mlp == MlpKind::SwiGlu ? 2 * fm : fm;
  const double routed = local * static_cast<double>(m.top_k);
  const double moe = dense_layer - 19 * tokens * h / t + 4 * local * static_cast<double>(m.experts) +
                     routed * 2 * (2 * h + fc1m + fm) +
                     static_cast<double>(m.shared_experts) * tokens * 2 * (fc1m + fm) / t - fp8.attention - fp8.moe;
  const double dense = dense_layer - fp8.attention - fp8.mlp;
  double sum = 0;
  int64_t count = 0;
  for (int64_t c = 0; c < p.vpp; ++c) {
    const LayerRange r = chunk_layers(job, pp_rank, c);
    for (int64_t l = r.first; l < r.first + r.count; ++l, ++count) sum += m.is_moe_layer(l) ? moe : dense;
  }
  return count > 0 ? sum / static_cast<double>(count) : dense;
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
  mem.optimizer_bytes = p.zero_stage >= 1 ? 12 * sharded : 12 * n;
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
  const double h = static_cast<double>(m.hidden);
  const double a = static_cast<double>(m.heads);
  const double t = static_cast<double>(p.tp);
  const double keys = m.attention == AttentionKind::Sliding ? static_cast<double>(std::min(m.window, m.seq_len))
                                                            : static_cast<double>(m.seq_len);
  // Selective recomputation keeps no score-sized activations (Korthikanti et al. 2022, §4).
  const bool no_scores = job.options.operators.flash_attention || job.options.selective_recompute;
  const double scores = no_scores ? 0.0 : 5 * a * keys / (h * t);
  const bool sp = p.sequence_parallel && p.tp > 1;
  double per_layer = s * b * h * ((sp ? 34 / t : 10 + 24 / t) + scores);
  const Fp8Saving fp8 = fp8_saving(job, s, sp); // zero without FP8 GEMMs
  if (m.experts > 0)
    per_layer = mean_layer_activations(job, pp_rank, per_layer, fp8);
  else
    per_layer -= fp8.attention + fp8.mlp;
  const double layer_input = 2 * s * b * h / (sp ? t : 1);

  // most forward passes (of any chunk) whose backward has not run yet; with ZB-H1 also
  // the B-done passes whose W has not run, which keep what the weight gradients read:
  // the four GEMMs' inputs and output gradients (wgrad_layer, per layer)
  const auto order = pipeline_order(job.options.pipeline, p.pp, p.vpp, p.micro_batches(), pp_rank);
  const double f = static_cast<double>(m.ffn_hidden);
  const double fc1 = m.mlp == MlpKind::SwiGlu ? 2 * f : f;
  const double qkv = h + 2 * static_cast<double>(m.kv()) * (h / a);
  // (FP8: the GEMMs' inputs are kept as their FP8 copies, 1 B per element)
  const double wgrad_layer =
      2 * s * b * (2 * h / (sp ? t : 1) + h / t + f / t + qkv / t + h + fc1 / t + h) - fp8.attention - fp8.mlp;
  int64_t in_flight = 0;
  int64_t w_pending = 0;
  int64_t most = 0;
  double most_pending = 0; // W-pending passes at the peak, as a fraction of a full pass
  double peak = -1;
  for (const auto& step : order) {
    if (step.weight) {
      --w_pending;
      continue;
    }
    in_flight += step.forward ? 1 : -1;
    if (!step.forward && job.options.pipeline == PipelineKind::ZeroBubbleH1) ++w_pending;
    const double held = static_cast<double>(in_flight) * per_layer + static_cast<double>(w_pending) * wgrad_layer;
    if (held > peak) {
      peak = held;
      most = in_flight;
      most_pending = static_cast<double>(w_pending) * wgrad_layer / per_layer;
    }
  }
  // layers per chunk: the most of this rank's chunks (they differ with uneven stages)
  int64_t chunk_most = 0;
  for (int64_t c = 0; c < p.vpp; ++c) chunk_most = std::max(chunk_most, chunk_layers(job, pp_rank, c).count);
  const double layers_per_chunk = static_cast<double>(chunk_most);
  const double pending = most_pending * layers_per_chunk * per_layer;
  if (job.options.recompute) {
    // the recomputed layers (every one, or every n-th: at most ⌈layers / n⌉ of a chunk)
    // keep only their input, the others everything; a recomputed layer's own
    // activations exist once, during its backward
    double kept = layer_input;
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
    const double recomputed = static_cast<double>((chunk_most + every - 1) / every);
    mem.activations_bytes = static_cast<double>(most) * recomputed * kept +
                            static_cast<double>(most) * (layers_per_chunk - recomputed) * per_layer + per_layer +
                            pending;
  } else
    mem.activations_bytes = static_cast<double>(most) * layers_per_chunk * per_layer + pending;
  if (pp_rank == p.pp - 1) mem.activations_bytes += s * b * static_cast<double>(m.vocab) / t * 4;
  return mem;
}

} // namespace twinscale::schedules
