// FP8 GEMMs need FP8 tensor cores: a FP8 job on a cluster whose GPU has none
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
