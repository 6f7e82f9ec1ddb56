// Numeric options and the options that need another: 0 or a negative GPU memory is refused
// by campaign and tune-checkpoint (and the value reaches their simulated iteration instead
// of being ignored), --speed-seed without a distribution is a usage error, GPU speed
// factors are bounded once (the speed file's reader and the simulator check one range,
// products included), and a trace recorded in memory is refused up front with its
// estimated size when it would not fit.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "tests/cli_runner.hpp"

namespace fs = std::filesystem;

namespace {

using twinscale::test::CliOutput;
using twinscale::test::write_text;

fs::path scratch() { return twinscale::test::scratch_dir("numeric-options"); }

CliOutput run(const std::string& args, const std::string& env = "") {
  return twinscale::test::run_cli_split(args, scratch(), env + "timeout 120 ");
}

} // namespace

TEST_CASE("numeric options: campaign and tune-checkpoint refuse a GPU memory of 0 or less", "[cli][options]") {
  for (const std::string command : {"campaign", "tune-checkpoint"})
    for (const std::string gb : {"0", "-1"}) {
      const CliOutput r = run(command + " --preset tiny-megascale --iteration-time 1 --gpu-memory-gb " + gb);
      INFO(command << " --gpu-memory-gb " << gb << "\n" << r.err);
      CHECK(r.code == 1);
      CHECK(r.says("--gpu-memory-gb " + gb + ": must be > 0"));
    }
}

TEST_CASE("numeric options: campaign's simulated iteration checks memory against --gpu-memory-gb", "[cli][options]") {
  CliOutput r = run("campaign --preset tiny-megascale --sim-mode analytic --days 1 --gpu-memory-gb 0.001");
  CHECK(r.code == 1);
  CHECK(r.says("but the GPU has 0.0 GB"));
  // with --iteration-time nothing is simulated: the option would be ignored, so it is refused
  r = run("tune-checkpoint --preset tiny-megascale --iteration-time 1 --gpu-memory-gb 80");
  CHECK(r.code == 1);
  CHECK(r.says("--gpu-memory-gb: has no effect with --iteration-time"));
}

TEST_CASE("numeric options: --speed-seed without --gpu-speed-dist is a usage error", "[cli][options]") {
  const CliOutput r = run("simulate --preset tiny-1f1b --mode analytic --speed-seed 3");
  CHECK(r.code == 2);
  CHECK(r.says("--speed-seed requires --gpu-speed-dist"));
  CHECK(run("simulate --preset tiny-1f1b --mode analytic --speed-seed 3 --gpu-speed-dist normal:0.02").code == 0);
}

TEST_CASE("numeric options: GPU speed factors are bounded once, products included, naming the file",
          "[cli][options][physics]") {
  const fs::path product = scratch() / "product.csv";
  write_text(product, "rank,0,1000\nserver,0,10000\n"); // each entry in range, their product 10^7 not
  CliOutput r = run("simulate --preset tiny-1f1b --mode analytic --gpu-speed-file " + product.string());
  CHECK(r.code == 1);
  CHECK(r.says(product.string() + ": GPU 0 gets factor 1e+07, the product of the entries naming it"));
  CHECK(r.says("[1e-06, 1e+06]"));
  const fs::path tiny = scratch() / "tiny.csv";
  write_text(tiny, "rank,3,1e-7\n");
  r = run("simulate --preset tiny-1f1b --mode analytic --gpu-speed-file " + tiny.string());
  CHECK(r.code == 1);
  CHECK(r.says(tiny.string() + ":1: factor '1e-7' is not a number in [1e-06, 1e+06]"));
  r = run("simulate --preset tiny-1f1b --mode analytic --gpu-speed-dist uniform:0:2");
  CHECK(r.code == 1);
  CHECK(r.says("--gpu-speed-dist 'uniform:0:2': need LO ≤ HI, both speed factors in [1e-06, 1e+06]"));
}

TEST_CASE("numeric options: a Chrome trace of 12,288 ranks is refused up front with its estimated size",
          "[cli][options][runaway]") {
  const fs::path out = scratch() / "all.json";
  const CliOutput r =
      run("simulate --preset gpt-175b-megascale --mode analytic --trace " + out.string() + " --ranks 0-12287",
          "TWINSCALE_MEMORY_BYTES=100000000000 ");
  CHECK(r.code == 1);
  CHECK(r.says("--ranks 0-12287: 12288 ranks of about"));
  CHECK(r.says("GiB of Chrome JSON"));
  CHECK(r.says("(TWINSCALE_MEMORY_BYTES)"));
  CHECK(r.says("FILE.tstrace"));
  CHECK_FALSE(fs::exists(out));
  // a few ranks fit
  CHECK(run("simulate --preset tiny-1f1b --mode analytic --trace " + out.string() + " --ranks 0-7").code == 0);
}
