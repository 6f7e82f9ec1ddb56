// Activation memory (schedules/memory.cpp): Korthikanti et al.'s accounting written over the
// model's tensors (GPT's 34·s·b·h/t; grouped-query attention, SwiGLU and dropout as the
// tensors they keep) and the passes in flight counted by their own chunk's layers.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "config/job_file.hpp"
#include "schedules/memory.hpp"
#include "schedules/pipeline.hpp"
#include "schedules/stage_layers.hpp"

using namespace twinscale;
using namespace twinscale::schedules;

namespace {
/// One pipeline stage, one micro-batch in flight at a time (pp = 1: forward, backward,
/// forward …), TP 8 with sequence parallelism, no recomputation, FlashAttention: the
/// activations are `layers` layers of one micro-batch plus the last stage's fp32 logits.
JobSpec one_stage(const char* preset) {
  JobSpec job = config::load_job_preset(preset);
  job.parallel.pp = 1;
  job.parallel.vpp = 1;
  job.parallel.first_stage_layers = job.parallel.last_stage_layers = 0;
  job.parallel.tp = 8;
  job.parallel.cp = 1;
  job.parallel.dp = 1;
  job.parallel.sequence_parallel = true;
  job.parallel.micro_batch = 1;
  job.parallel.global_batch = 4;
  job.options.pipeline = PipelineKind::OneFOneB;
  job.options.recompute = false;
  job.options.selective_recompute = false;
  job.options.operators.flash_attention = true;
  job.options.gemm_precision = GemmPrecision::Bf16;
  return job;
}

double per_layer(const JobSpec& job) { // activations of one layer of one micro-batch, bytes
  const auto& m = job.model;
  const double logits = static_cast<double>(m.seq_len * m.vocab) / static_cast<double>(job.parallel.tp) * 4;
  return (estimate_memory(job, 0).activations_bytes - logits) / static_cast<double>(m.layers);
}
} // namespace

TEST_CASE("activation memory: GPT keeps Korthikanti's 34·s·b·h/t a layer with sequence parallelism",
          "[schedules][memory]") {
  const JobSpec job = one_stage("gpt-175b-megatron");
  REQUIRE(job.model.kv() == job.model.heads);
  REQUIRE(job.model.mlp == MlpKind::Gelu);
  REQUIRE(job.model.ffn_hidden == 4 * job.model.hidden);
  REQUIRE(job.model.dropout > 0);
  const double sbh = static_cast<double>(job.model.seq_len * job.model.hidden);
  CHECK(per_layer(job) == Approx(34 * sbh / 8));
  JobSpec no_sp = job; // without sequence parallelism: s·b·h·(10 + 24/t)
  no_sp.parallel.sequence_parallel = false;
  CHECK(per_layer(no_sp) == Approx(sbh * (10 + 24.0 / 8)));
}

TEST_CASE("activation memory: grouped-query attention, SwiGLU and no dropout keep their own tensors",
          "[schedules][memory]") {
  JobSpec job = one_stage("llama3-70b"); // 64 heads, 8 of them for K and V; ffn 28,672
  REQUIRE(job.model.kv() == 8);
  REQUIRE(job.model.mlp == MlpKind::SwiGlu);
  REQUIRE(job.model.dropout == 0);
  const double s = static_cast<double>(job.model.seq_len), h = static_cast<double>(job.model.hidden);
  const double f = static_cast<double>(job.model.ffn_hidden), kv = 8.0 / 64 * h;
  // norm inputs and GEMM inputs (4 · 2h), Q, K, V, attention output (2(h + 2kv + h)),
  // gate, up, silu and product of the eager SwiGLU (4 · 2f); all split over TP 8
  job.options.operators.fused_gelu = false;
  CHECK(per_layer(job) == Approx(s * (8 * h + 2 * (2 * h + 2 * kv) + 8 * f) / 8));
  // one SwiGLU kernel keeps FC1's output (gate and up) and the product, not silu's output
  const double eager = per_layer(job);
  job.options.operators.fused_gelu = true;
  CHECK(eager - per_layer(job) == Approx(s * 2 * f / 8));
  // dropout adds a 1-byte mask after the projection and after FC2
  const double without = per_layer(job);
  job.model.dropout = 0.1;
  CHECK(per_layer(job) - without == Approx(s * 2 * h / 8));
}

TEST_CASE("activation memory: a pass in flight keeps its own chunk's layers (uneven first stage)",
          "[schedules][memory]") {
  JobSpec job = config::load_job_preset("llama3-405b"); // interleaved, first and last stage one layer fewer
  REQUIRE(job.parallel.first_stage_layers == 1);
  REQUIRE(job.parallel.vpp == 4);
  job.parallel.dp = 64; // 8,192 GPUs: 32 micro-batches per pipeline
  const int64_t pp = job.parallel.pp, vpp = job.parallel.vpp;
  for (int64_t stage : {int64_t{0}, int64_t{1}}) {
    INFO("stage " << stage);
    std::vector<int64_t> layers;
    for (int64_t c = 0; c < vpp; ++c) layers.push_back(stage_layers(job, c * pp + stage).count);
    // the most layer passes held at once over the stage's order
    int64_t held = 0, most = 0, most_passes = 0, passes = 0;
    for (const auto& step : pipeline_order(job.options.pipeline, pp, vpp, job.parallel.micro_batches(), stage)) {
      held += (step.forward ? 1 : -1) * layers[static_cast<size_t>(step.chunk)];
      passes += step.forward ? 1 : -1;
      if (held > most) most = held, most_passes = passes;
    }
    const double layer = per_layer(one_stage("llama3-405b")); // the same layer, one micro-batch
    CHECK(estimate_memory(job, stage).activations_bytes == Approx(static_cast<double>(most) * layer));
    std::printf("llama3-405b at 8,192 GPUs, stage %lld: at most %lld layer passes in %lld passes\n",
                static_cast<long long>(stage), static_cast<long long>(most), static_cast<long long>(most_passes));
    if (stage == 0) { // its first chunk holds one layer: fewer layers than passes · 2
      CHECK(layers[0] == 1);
      CHECK(most < 2 * most_passes);
    }
  }
}
