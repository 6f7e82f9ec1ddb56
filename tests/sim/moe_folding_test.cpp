// MoE parallel folding in the simulator: a published Megatron-Core layout whose expert
// parallelism (32) exceeds its data parallelism (16) simulates in analytic mode.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "tests/cli_runner.hpp"

TEST_CASE("qwen3-235b-a22b (TP 2 PP 8 EP 32, folded) simulates in analytic mode", "[sim][moe][folding]") {
  const auto r = twinscale::test::run_cli("simulate --preset qwen3-235b-a22b --mode analytic --json",
                                          twinscale::test::Capture::StdoutOnly);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  const double t = j.at("iteration_time_s").get<double>();
  const double mfu = j.at("mfu").get<double>();
  INFO("iteration " << t << " s, MFU " << mfu);
  CHECK(t > 0);
  CHECK(mfu > 0.05);
  CHECK(mfu < 0.8);
}
