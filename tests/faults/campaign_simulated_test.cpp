// campaign / tune-checkpoint without --iteration-time take the iteration time from the
// simulator (through config::Scenario, as `simulate` does: tests/config/scenario_test.cpp);
// the table says which value was used, and --iteration-time still overrides it.
#include <catch2/catch.hpp>

#include "tests/cli_runner.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using Result = twinscale::test::CliResult;

Result run_cli(const std::string& args) { return twinscale::test::run_cli(args, twinscale::test::Capture::StdoutOnly); }

/// The number after the first `"key": ` in a JSON text (NaN when absent).
double json_number(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return std::nan("");
  return std::strtod(json.c_str() + at + key.size() + 4, nullptr);
}

} // namespace

TEST_CASE("campaign: analytic is the default mode, the table says which value it used", "[faults][cli][sim]") {
  const auto sim = run_cli("simulate --preset tiny-megascale --json --mode analytic");
  REQUIRE(sim.rc == 0);
  char expected[128];
  std::snprintf(expected, sizeof expected, "iteration time %.6f s (simulated: analytic mode on tiny-2tier",
                json_number(sim.out, "iteration_time_s"));
  const auto t = run_cli("campaign --preset tiny-megascale --days 2 --seeds 2");
  REQUIRE(t.rc == 0);
  CHECK(t.out.rfind(expected, 0) == 0);
  const auto tune = run_cli("tune-checkpoint --preset tiny-megascale --days 2 --seeds 2 --points 3");
  REQUIRE(tune.rc == 0);
  CHECK(tune.out.rfind(expected, 0) == 0);
  // Deterministic: the same inputs give byte-identical output.
  CHECK(run_cli("campaign --preset tiny-megascale --days 2 --seeds 2").out == t.out);
}

TEST_CASE("campaign: --iteration-time overrides the simulator", "[faults][cli][sim]") {
  const auto c = run_cli("campaign --preset tiny-megascale --days 2 --seeds 2 --iteration-time 3.5 --json");
  REQUIRE(c.rc == 0);
  CHECK(json_number(c.out, "iteration_time_s") == 3.5);
  CHECK(c.out.find("\"kind\": \"given\"") != std::string::npos);
  const auto t = run_cli("campaign --preset tiny-megascale --days 2 --seeds 2 --iteration-time 3.5");
  CHECK(t.out.rfind("iteration time 3.500000 s (given by --iteration-time)", 0) == 0);
}

TEST_CASE("campaign: simulator options are checked", "[faults][cli][sim][errors]") {
  CHECK(run_cli("campaign --preset tiny-megascale --sim-mode warp").rc == 2);
  CHECK(run_cli("campaign --preset tiny-megascale --placement everywhere").rc == 2);
  const auto r = run_cli("campaign --preset tiny-megascale --cluster no-such-cluster");
  CHECK(r.rc == 1);
}
