// Answers that break physics or the run are refused, naming the inputs that cause them: an MFU
// above 100 % (every GPU made 8× faster by a speed file) and an infinite iteration time
// (a cluster whose GPU has peak_flops = 1e-300), both of which exited 0 with the figure, and a
// diagnose --world larger than the run (findings for ranks that never existed), a
// calibration table of impossibly fast kernels (an MFU above 100 %), and a trace whose
// every op failed (it said "nothing found").
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_runner.hpp"

namespace fs = std::filesystem;

namespace {

using twinscale::test::CliOutput;
using twinscale::test::write_text;

fs::path scratch() { return twinscale::test::scratch_dir("physics"); }

CliOutput run(const std::string& args) { return twinscale::test::run_cli_split(args, scratch()); }

} // namespace

TEST_CASE("physics: an MFU above 100 % is refused naming the GPU speed file", "[cli][physics]") {
  const fs::path speeds = scratch() / "fast.csv";
  std::string text;
  for (int s = 0; s < 128; ++s) text += "server," + std::to_string(s) + ",8\n"; // llama3-8b: 128 servers
  write_text(speeds, text);
  const CliOutput r = run("simulate --preset llama3-8b --mode analytic --gpu-speed-file " + speeds.string());
  CHECK(r.code == 1);
  CHECK(r.says("the result breaks physics: an MFU of"));
  CHECK(r.says("above the GPUs' peak"));
  CHECK(r.says("--gpu-speed-file " + speeds.string()));
  CHECK(r.out.empty());
}

TEST_CASE("physics: an infinite iteration time is refused naming the cluster", "[cli][physics]") {
  std::ifstream in(std::string(TWINSCALE_SOURCE_DIR) + "/presets/clusters/tiny-2tier.toml");
  std::string cluster((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string model = "model = \"A100-SXM-80GB\"\n";
  const auto at = cluster.find(model);
  REQUIRE(at != std::string::npos);
  cluster.insert(at + model.size(), "peak_flops = 1e-300\n");
  const fs::path file = scratch() / "slow.toml";
  write_text(file, cluster);
  const CliOutput r = run("simulate --preset tiny-1f1b --mode analytic --cluster " + file.string());
  CHECK(r.code == 1);
  CHECK(r.says("the result breaks physics: an iteration time of inf s"));
  CHECK(r.says("the cluster '"));
}

TEST_CASE("physics: diagnose --world must match the run's trace", "[cli][physics]") {
  const fs::path dir = scratch() / "hung";
  fs::remove_all(dir);
  run("simulate --preset tiny-1f1b --mode analytic --every-rank --hang-rank 3 --run-dir " + dir.string() + " --trace " +
      (dir / "trace.json").string());
  REQUIRE(fs::exists(dir / "trace.json"));
  CliOutput r = run("diagnose " + dir.string() + " --world 1048576");
  CHECK(r.code == 1);
  CHECK(r.says("--world 1048576: the run's trace in " + dir.string() + " holds 8 ranks"));
  r = run("diagnose " + dir.string() + " --world 8");
  CHECK(r.code == 4); // the hang's findings, as without --world
  CHECK(r.out.find("diagnosis of " + dir.string() + ": 8 ranks") != std::string::npos);
}

TEST_CASE("physics: a job larger than its cluster file is explained", "[cli][physics]") {
  std::ifstream in(std::string(TWINSCALE_SOURCE_DIR) + "/presets/clusters/tiny-2tier.toml");
  std::string cluster((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = cluster.find("gpus = 32\n");
  REQUIRE(at != std::string::npos);
  cluster.replace(at, 10, "gpus = 8\n");
  const fs::path file = scratch() / "eight.toml";
  write_text(file, cluster);
  const CliOutput r =
      run("simulate --preset tiny-1f1b --mode analytic --gpus 64 --global-batch 64 --cluster " + file.string());
  CHECK(r.code == 0);
  CHECK(r.says("note: cluster '" + file.string() + "' describes 8 GPUs; the job needs 64"));
}

TEST_CASE("physics: FlashAttention-2 on a Blackwell GPU is costed as asked, and the note names cuDNN's",
          "[cli][physics]") {
  const CliOutput fa2 = run("simulate --preset llama3-8b --cluster b200-800g --mode analytic");
  CHECK(fa2.code == 0);
  CHECK(fa2.says("note: the job runs FlashAttention-2 on B200, where it has no native kernels"));
  CHECK(fa2.says("--set schedule.operators.attention_backend=cudnn"));
  const CliOutput cudnn = run("simulate --preset llama3-8b --cluster b200-800g --mode analytic --set "
                              "schedule.operators.attention_backend=cudnn");
  CHECK(cudnn.code == 0);
  CHECK_FALSE(cudnn.says("no native kernels"));
  // on Hopper FlashAttention-2 has its kernels: no note
  CHECK_FALSE(run("simulate --preset llama3-8b --mode analytic").says("no native kernels"));
}

TEST_CASE("physics: a calibration table of 10 ns kernels is refused as an MFU above 100 %", "[cli][physics]") {
  const fs::path dir = scratch() / "calibration";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string sim = (dir / "sim.json").string();
  REQUIRE(run("simulate --preset tiny-1f1b --mode analytic --trace " + sim).code == 0);
  // calibration is measured on real runs: the simulated trace stands for one of the CPU backend
  const std::string measured = (dir / "cpu.json").string();
  write_text(measured,
             std::regex_replace(twinscale::test::slurp(sim), std::regex(R"("source":"sim")"), R"("source":"cpu")"));
  const std::string table = (dir / "cal.json").string();
  REQUIRE(run("calibrate " + measured + " --preset tiny-1f1b --out " + table).code == 0);
  auto cal = nlohmann::json::parse(twinscale::test::slurp(table));
  REQUIRE_FALSE(cal["kernels"].empty());
  for (auto& k : cal["kernels"]) k["seconds"] = 1e-8; // every kernel in 10 ns
  for (auto& c : cal["comms"]) {                      // and every collective almost free
    c["seconds"] = 1e-9;
    c["algbw_bytes_per_s"] = c["bytes"].get<double>() / 1e-9;
    c["busbw_bytes_per_s"] = c["bytes"].get<double>() / 1e-9;
  }
  const std::string fast = (dir / "fast.json").string();
  write_text(fast, cal.dump());
  const CliOutput r = run("simulate --preset tiny-1f1b --mode analytic --calibration " + fast);
  CHECK(r.code == 1);
  CHECK(r.says("the result breaks physics: an MFU of"));
  CHECK(r.says("--calibration " + fast + " (kernel times)"));
  CHECK(r.out.empty());
}

TEST_CASE("physics: a trace whose every op failed is a finding, not nothing found", "[cli][physics]") {
  const fs::path dir = scratch() / "failed";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string ok = (dir / "ok.json").string();
  REQUIRE(run("simulate --preset tiny-1f1b --mode analytic --every-rank --trace " + ok).code == 0);
  const std::string text = twinscale::test::slurp(ok);
  REQUIRE(text.find(R"("failed":false)") != std::string::npos);
  const std::string failed = (dir / "failed.json").string();
  write_text(failed, std::regex_replace(text, std::regex(R"("failed":false)"), R"("failed":true)"));
  CliOutput r = run("diagnose " + ok);
  CHECK(r.code == 0); // the healthy run: nothing found
  r = run("diagnose " + failed);
  CHECK(r.code == 4);
  CHECK(r.out.find("nothing found") == std::string::npos);
  CHECK(r.out.find("failed_ops") != std::string::npos);
  CHECK(std::regex_search(r.out, std::regex(R"(([0-9]+) of \1 communication op\(s\) failed)")));
  CHECK(r.out.find("on 8 rank(s)") != std::string::npos);
}
