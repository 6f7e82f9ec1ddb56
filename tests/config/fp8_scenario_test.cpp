// FP8 GEMMs need FP8 tensor cores, cuDNN's attention a rate in the catalogue: a job asking
// for either on a cluster whose GPU has none
// is refused naming the GPU and the catalogue's GPUs that have them.
#include <catch2/catch.hpp>

#include "config/error.hpp"
#include "config/job_file.hpp"
#include "config/scenario.hpp"

using namespace twinscale;

TEST_CASE("a FP8 job on a cluster without FP8 is refused naming the GPU and the valid ones", "[config][fp8]") {
  config::ScenarioSpec spec;
  spec.job = config::load_job_preset("tiny-fp8");
  spec.job_source = "preset tiny-fp8";
  spec.cluster = "tiny-2tier";
  const auto build = [&] { config::Scenario scenario(spec); };
  CHECK_THROWS_AS(build(), config::ConfigError);
  CHECK_THROWS_WITH(build(), Catch::Contains("preset tiny-fp8") && Catch::Contains("A100-SXM-80GB") &&
                                 Catch::Contains("H100-SXM") && Catch::Contains("B200") &&
                                 Catch::Contains("precision.gemm"));
  spec.cluster = "tiny-h100";
  CHECK_NOTHROW(build());
}

TEST_CASE("cuDNN's attention on a GPU whose catalogue entry has no rate for it is refused", "[config][attention]") {
  config::ScenarioSpec spec;
  spec.job = config::load_job_preset("tiny-1f1b");
  spec.job.options.operators.flash_attention = true;
  spec.job.options.operators.attention_backend = schedules::AttentionBackend::Cudnn;
  spec.job_source = "preset tiny-1f1b";
  spec.cluster = "tiny-2tier"; // A100
  const auto build = [&] { config::Scenario scenario(spec); };
  CHECK_THROWS_AS(build(), config::ConfigError);
  CHECK_THROWS_WITH(build(), Catch::Contains("preset tiny-1f1b") &&
                                 Catch::Contains("schedule.operators.attention_backend") &&
                                 Catch::Contains("A100-SXM-80GB") && Catch::Contains("H100-SXM") &&
                                 Catch::Contains("B200") && Catch::Contains("flash-attn-2"));
  spec.cluster = "tiny-h100";
  CHECK_NOTHROW(build());
  // FlashAttention-2 runs anywhere
  spec.cluster = "tiny-2tier";
  spec.job.options.operators.attention_backend = schedules::AttentionBackend::FlashAttention2;
  CHECK_NOTHROW(build());
}
