// `twinscale --version`: the version, the commit and the libraries the build found.
#include <catch2/catch.hpp>

#include "tests/cli_runner.hpp"

TEST_CASE("version flag: twinscale --version names the version and commit, SimGrid, and CUDA and NCCL or their absence",
          "[cli]") {
  const auto r = twinscale::test::run_cli("--version", twinscale::test::Capture::StdoutOnly);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::StartsWith("twinscale 0.") && Catch::Contains("commit ") && Catch::Contains("SimGrid 3."));
  CHECK_THAT(r.out, Catch::Contains("NCCL ") || Catch::Contains("no CUDA device"));
}
