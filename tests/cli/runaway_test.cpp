// Inputs that used to run away: a device or a FIFO where a file is expected (read for
// ever, or blocked on open), a sweep grid whose distinct-value check was quadratic, and
// a checkpoint state larger than the machine's memory (bad_alloc). Each is refused at
// once (every command runs under `timeout`, so a hang fails the test) with exit 1 and a
// message naming the input and the figure.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "tests/cli_runner.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;

namespace {

using twinscale::test::CliOutput;
using twinscale::test::write_text;

fs::path scratch() { return twinscale::test::scratch_dir("runaway"); }

/// Runs the CLI under `timeout` (exit 124 if it hangs or runs away), with `env` before it.
CliOutput run(const std::string& args, const std::string& env = "", int timeout_s = 60) {
  return twinscale::test::run_cli_split(args, scratch(), env + "timeout " + std::to_string(timeout_s) + " ");
}

std::string fifo() {
  const fs::path p = scratch() / "fifo";
  if (!fs::exists(p)) REQUIRE(::mkfifo(p.c_str(), 0600) == 0);
  return p.string();
}

std::string tiny_trace() {
  const fs::path p = scratch() / "trace.json";
  if (!fs::exists(p)) REQUIRE(run("simulate --preset tiny-1f1b --mode analytic --trace " + p.string()).code == 0);
  return p.string();
}

} // namespace

TEST_CASE("runaway: a device or a FIFO given as an input file is refused at once", "[cli][runaway]") {
  for (const std::string& bad : {std::string("/dev/zero"), fifo()}) {
    const std::string inputs[] = {
        "sweep " + bad + " --db " + (scratch() / "z.db").string(),
        "diagnose " + tiny_trace() + " --links " + bad,
        "simulate --preset tiny-1f1b --mode analytic --gpu-speed-file " + bad,
    };
    for (const std::string& args : inputs) {
      INFO(args);
      const CliOutput r = run(args);
      CHECK(r.code == 1);
      CHECK(r.says(bad));
      CHECK(r.says("not a regular file"));
    }
  }
}

TEST_CASE("runaway: a grid of 4 axes of 100,000 values is refused quickly, naming the count", "[cli][runaway]") {
  std::string study = "name = \"huge\"\n[base]\njob = \"tiny-1f1b\"\n[axes]\n";
  for (const char* axis : {"gpus", "global_batch", "micro_batch", "seed"}) {
    study += std::string(axis) + " = [";
    for (int v = 1; v <= 100000; ++v) study += (v > 1 ? "," : "") + std::to_string(v);
    study += "]\n";
  }
  const fs::path f = scratch() / "huge.toml";
  write_text(f, study);
  // a guard, not a benchmark: the refusal takes under a second; the pairwise check took
  // 10 to 30 s (4 × 5·10^9 comparisons), which the 8 s limit turns into exit 124
  const CliOutput r = run("sweep " + f.string() + " --db " + (scratch() / "huge.db").string(), "", 8);
  CHECK(r.code == 1);
  CHECK(r.says("grid points (limit 10000000)"));
}

TEST_CASE("runaway: a random or Latin-hypercube sample of 10^8 points is refused at once, naming the limit",
          "[cli][runaway]") {
  // two axes of 20,000 values span 4·10^8 combinations, so 10^8 distinct points exist:
  // the sampler used to grow for minutes (random) or until bad_alloc (lhs)
  std::string axes = "[axes]\nseed = [";
  for (int v = 1; v <= 20000; ++v) axes += (v > 1 ? "," : "") + std::to_string(v);
  axes += "]\nglobal_batch = [";
  for (int v = 1; v <= 20000; ++v) axes += (v > 1 ? "," : "") + std::to_string(v);
  axes += "]\n";
  for (const char* method : {"random", "lhs"}) {
    INFO(method);
    const fs::path f = scratch() / (std::string(method) + ".toml");
    write_text(f, "name = \"big\"\n[base]\njob = \"tiny-1f1b\"\n" + axes + "[sample]\nmethod = \"" + method +
                      "\"\npoints = 100000000\n");
    const CliOutput r = run("sweep " + f.string() + " --db " + (scratch() / "big.db").string(), "", 8);
    CHECK(r.code == 1);
    CHECK(r.says(f.string() + ": key 'sample.points' is 100000000; must be in [1, 10000000]"));
    CHECK_FALSE(fs::exists(scratch() / "big.db"));
  }
}

TEST_CASE("runaway: a folder given as --gpu-speed-file is refused, not read as an empty file", "[cli][runaway]") {
  const fs::path dir = scratch() / "speeds-folder";
  fs::create_directories(dir);
  const CliOutput r = run("simulate --preset tiny-1f1b --mode analytic --gpu-speed-file " + dir.string());
  CHECK(r.code == 1);
  CHECK(r.says(dir.string() + ": not a regular file"));
  CHECK(r.out.empty());
}

TEST_CASE("runaway: a checkpoint state larger than the memory available is refused up front", "[cli][runaway]") {
  const fs::path dir = scratch() / "ckpt";
  const CliOutput r =
      run("run --synthetic 1x1x1 --checkpoint-dir " + dir.string() + " --checkpoint-step 0 --checkpoint-bytes 1e12",
          "TWINSCALE_MEMORY_BYTES=100000000000 ");
  CHECK(r.code == 1);
  CHECK(r.says("--checkpoint-bytes 1000.000000 GB"));
  CHECK(r.says("more than the 100.000000 GB of memory available"));
}

TEST_CASE("runaway: a flow run larger than the address-space limit (ulimit -v) is refused up front naming it",
          "[cli][runaway]") {
  if (twinscale::test::kAddressSanitizer)
    TWINSCALE_SKIP("AddressSanitizer's shadow memory cannot be mapped under ulimit -v");
  // 12,288 GPUs in flow mode need about 1.5 GiB: under a 1 GB limit the estimate refuses it
  // at once (it used to pass the estimate against free memory and abort inside SimGrid)
  const CliOutput r =
      run("simulate --preset gpt-175b-megascale --mode flow", "unset TWINSCALE_MEMORY_BYTES; ulimit -v 1000000; ");
  CHECK(r.code == 1);
  CHECK(r.says("flow mode on 12288 GPUs needs about"));
  CHECK(r.says("(RLIMIT_AS (ulimit -v))"));
  CHECK(r.says("--mode analytic"));
}
