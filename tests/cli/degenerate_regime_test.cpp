// campaign and tune-checkpoint warn (stderr) when the regime is degenerate — ETTR near 0,
// a restart longer than the interruption MTBF — and then call no formula "consistent".
#include <string>

#include <catch2/catch.hpp>

#include "tests/cli_runner.hpp"

using twinscale::test::run_cli_split;
using twinscale::test::scratch_dir;

namespace {
// Llama 3 405B at its 16K GPUs under the Megatron baseline's recovery: a restart outlasts
// the MTBF, the job hardly trains.
const std::string kDegenerate =
    " --preset llama3-405b --iteration-time 10 --recovery megatron-baseline --seeds 2 --days 2";
} // namespace

TEST_CASE("tune-checkpoint warns of a degenerate regime and compares no formula", "[cli][faults]") {
  const auto dir = scratch_dir("degenerate-tune");
  const auto r = run_cli_split("tune-checkpoint" + kDegenerate + " --points 4", dir);
  REQUIRE(r.code == 0);
  CHECK(r.says("warning: a restart takes"));
  CHECK(r.says("longer than the interruption MTBF"));
  CHECK(r.says("is near 0"));
  CHECK(r.out.find("(consistent)") == std::string::npos);
  CHECK(r.out.find("not comparable: ETTR near 0") != std::string::npos);
}

TEST_CASE("campaign warns of a degenerate regime, not of a healthy one", "[cli][faults]") {
  const auto dir = scratch_dir("degenerate-campaign");
  const auto bad = run_cli_split("campaign" + kDegenerate, dir);
  REQUIRE(bad.code == 0);
  CHECK(bad.says("warning: a restart takes"));
  CHECK(bad.says("is near 0"));
  const auto ok = run_cli_split("campaign --preset tiny-megascale --iteration-time 1 --seeds 2", dir);
  REQUIRE(ok.code == 0);
  CHECK(!ok.says("warning"));
}

TEST_CASE("campaign and tune-checkpoint explain their figures in --help", "[cli][faults][help]") {
  const auto dir = scratch_dir("degenerate-help");
  CHECK(run_cli_split("campaign --help", dir).out.find("checkpoints lost = ") != std::string::npos);
  CHECK(run_cli_split("tune-checkpoint --help", dir).out.find("Daly-model = ") != std::string::npos);
}
