// The simulate summary names every parallel dimension the job uses, in Megatron's names.
#include <catch2/catch.hpp>

#include "tests/cli_runner.hpp"

using Catch::Contains;

TEST_CASE("simulate header: cp and ep are shown where the job uses them", "[cli]") {
  using twinscale::test::Capture;
  using twinscale::test::run_cli;
  auto r = run_cli("simulate --preset tiny-cp --mode analytic", Capture::StdoutOnly);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Contains("(tp 2, pp 2, dp 1, cp 2)"));
  r = run_cli("simulate --preset tiny-moe --mode analytic", Capture::StdoutOnly);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Contains(", ep 2)"));
  r = run_cli("simulate --preset tiny-1f1b --mode analytic", Capture::StdoutOnly);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Contains("(tp 2, pp 2, dp 2)"));
}
