#include "schedules/memory.hpp"

#include <algorithm>

#include "schedules/pipeline.hpp"

namespace twinscale::schedules {

namespace {
double layer_parameters(const JobSpec& job) {
  const double h = static_cast<double>(job.model.hidden);
  const double f = static_cast<double>(job.model.ffn_hidden);
  const double t = static_cast<double>(job.parallel.tp);
  const double qkv = h + 2 * static_cast<double>(job.model.kv() * (job.model.hidden / job.model.heads));
  const double fc1 = job.model.mlp == MlpKind::SwiGlu ? 2 * f : f;
  // QKV (h·qkv + qkv; qkv = 3h without grouped-query attention) and FC1 (h·fc1 + fc1)
  // column-parallel, projection (h²) and FC2 (f·h) row-parallel with replicated biases
  // (h each), two LayerNorms (4h) replicated.
  return (h * qkv + qkv + h * fc1 + fc1 + h * h + f * h) / t + 2 * h + 4 * h;
}
} // namespace

double chunk_parameters(const JobSpec& job, int64_t pp_rank, int64_t chunk) {
  const int64_t pp = job.parallel.pp;
  const int64_t vpp = job.parallel.vpp;
  const int64_t virtual_stage = chunk * pp + pp_rank;
  const int64_t layers = job.model.layers / (pp * vpp);
  double n = static_cast<double>(layers) * layer_parameters(job);
  const double h = static_cast<double>(job.model.hidden);
  const double embedding = static_cast<double>(job.model.vocab) / static_cast<double>(job.parallel.tp) * h;
  if (virtual_stage == 0) n += embedding + static_cast<double>(job.model.seq_len) * h;
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

MemoryEstimate estimate_memory(const JobSpec& job, int64_t pp_rank) {
  const auto& p = job.parallel;
  const auto& m = job.model;
  MemoryEstimate mem;
  const double n = stage_parameters(job, pp_rank);
  const double dp = static_cast<double>(p.dp);
  mem.parameters_bytes = 2 * n;
  mem.gradients_bytes = p.zero_stage >= 2 ? 2 * n / dp : 2 * n;
  mem.optimizer_bytes = p.zero_stage >= 1 ? 12 * n / dp : 12 * n;

  const double s = static_cast<double>(m.seq_len);
  const double b = static_cast<double>(p.micro_batch);
  const double h = static_cast<double>(m.hidden);
  const double a = static_cast<double>(m.heads);
  const double t = static_cast<double>(p.tp);
  const double keys = m.attention == AttentionKind::Sliding ? static_cast<double>(std::min(m.window, m.seq_len)) : s;
  // Selective recomputation keeps no score-sized activations (Korthikanti et al. 2022, §4).
  const bool no_scores = job.options.operators.flash_attention || job.options.selective_recompute;
  const double scores = no_scores ? 0.0 : 5 * a * keys / (h * t);
  const bool sp = p.sequence_parallel && p.tp > 1;
  const double per_layer = s * b * h * ((sp ? 34 / t : 10 + 24 / t) + scores);
  const double layer_input = 2 * s * b * h / (sp ? t : 1);

  // most forward passes (of any chunk) whose backward has not run yet
  const auto order = pipeline_order(job.options.pipeline, p.pp, p.vpp, p.micro_batches(), pp_rank);
  int64_t in_flight = 0;
  int64_t most = 0;
  for (const auto& step : order) {
    in_flight += step.forward ? 1 : -1;
    most = std::max(most, in_flight);
  }
  const double layers_per_chunk = static_cast<double>(m.layers / (p.pp * p.vpp));
  if (job.options.recompute)
    mem.activations_bytes = static_cast<double>(most) * layers_per_chunk * layer_input + per_layer;
  else
    mem.activations_bytes = static_cast<double>(most) * layers_per_chunk * per_layer;
  if (pp_rank == p.pp - 1) mem.activations_bytes += s * b * static_cast<double>(m.vocab) / t * 4;
  return mem;
}

} // namespace twinscale::schedules
