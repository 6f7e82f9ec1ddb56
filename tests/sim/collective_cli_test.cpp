// The `twinscale collective` command: the nccl-tests table, JSON, determinism, errors.
#include <catch2/catch.hpp>

#include "tests/cli_runner.hpp"

#include <string>

namespace {

twinscale::test::CliResult run(const std::string& args) {
  return twinscale::test::run_cli(args, twinscale::test::Capture::StdoutOnly);
}

} // namespace

TEST_CASE("twinscale collective prints an nccl-tests table, deterministically", "[sim][cli][nccl]") {
  const std::string args = "collective --cluster dgx-a100-superpod --gpus 16 -b 1K -e 1M -f 32";
  for (const char* mode : {" --mode analytic", " --mode flow"}) {
    const auto a = run(args + mode), b = run(args + mode);
    REQUIRE(a.rc == 0);
    CHECK(a.out == b.out);
    CHECK(a.out.find("algbw") != std::string::npos);
    CHECK(a.out.find("busbw") != std::string::npos);
    CHECK(a.out.find("        1024          256    float    sum") != std::string::npos);
    CHECK(a.out.find("     1048576       262144    float    sum") != std::string::npos);
  }
  const auto j =
      run("collective --cluster dgx-a100-superpod --op all-gather --gpus 8 -b 1M -e 1M --json --mode analytic");
  REQUIRE(j.rc == 0);
  for (const char* key : {"\"busbw_gb_per_s\"", "\"algbw_gb_per_s\"", "\"time_us\"", "\"protocol\"", "\"channels\""})
    CHECK(j.out.find(key) != std::string::npos);
}

TEST_CASE("twinscale collective: usage errors exit 2, bad input exits 1", "[sim][cli][nccl]") {
  CHECK(run("collective --gpus 8").rc == 2);                                 // no cluster
  CHECK(run("collective --cluster dgx-a100-superpod --op all-mix").rc == 2); // bad op
  CHECK(run("collective --cluster no-such-cluster").rc == 1);
  CHECK(run("collective --cluster dgx-a100-superpod --gpus 12 --gpus-per-server 8").rc == 1);
  CHECK(run("collective --cluster dgx-a100-superpod --gpus 8 --gpus-per-server 9").rc == 1);
  CHECK(run("collective --cluster dgx-a100-superpod -b 1X").rc == 1);
  CHECK(run("collective --cluster dgx-a100-superpod -b 1M -e 1K").rc == 1);
  CHECK(run("collective --cluster dgx-a100-superpod --factor 1").rc == 1);
}
