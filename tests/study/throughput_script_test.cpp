// experiments/config_search/throughput.sh: a run that fails stops the script with a
// message naming the run and the end of its log (before, the reason was only in mpi.log).
#include <cstdlib>
#include <string>
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include "tests/cli_runner.hpp"

namespace fs = std::filesystem;
using namespace twinscale;

TEST_CASE("throughput script: a failing mpirun stops it naming the run and the end of its log", "[study][cli]") {
  const fs::path dir = test::scratch_dir("throughput-fail");
  const fs::path err = dir / "stderr.txt";
  // an option mpirun does not know: it fails at once, whatever the machine
  const std::string cmd =
      "env TWINSCALE_MPIRUN_ARGS=--no-such-mpirun-option TWINSCALE_CLI=" + std::string(TWINSCALE_CLI) + " " +
      TWINSCALE_SOURCE_DIR + "/experiments/config_search/throughput.sh 2 " + (dir / "out").string() + " " +
      TWINSCALE_SOURCE_DIR + "/examples/study.toml >/dev/null 2>" + err.string();
  const int status = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  const std::string text = test::slurp(err);
  CHECK_THAT(text, Catch::Contains("throughput.sh: mpirun -np 2") && Catch::Contains("failed (exit") &&
                       Catch::Contains("mpi.log"));
  CHECK(fs::exists(dir / "out" / "one.db")); // the one-process run before it completed
  fs::remove_all(dir);
}
