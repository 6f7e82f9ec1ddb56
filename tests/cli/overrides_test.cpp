// Command-line overrides of a job or cluster document (--set KEY=VALUE, --gpus,
// --global-batch) are made to its TOML before it is read, so they are checked exactly as
// the file's own keys; and `preset show` prints a preset's TOML.
#include <string>

#include <catch2/catch.hpp>

#include "tests/cli_runner.hpp"

using twinscale::test::run_cli_split;
using twinscale::test::scratch_dir;
using twinscale::test::write_text;

TEST_CASE("overrides: --gpus on a job file is applied before the file's own divisibility checks", "[cli][overrides]") {
  const auto dir = scratch_dir("overrides-gpus");
  // llama3-8b with tp = 1: at the file's 1,024 GPUs dp = 1024 does not divide the 512
  // sequences of a batch, at 64 GPUs (dp = 64) it does
  const auto preset = run_cli_split("preset show llama3-8b --kind jobs", dir);
  REQUIRE(preset.code == 0);
  std::string text = preset.out;
  const auto at = text.find("tp = 2");
  REQUIRE(at != std::string::npos);
  text.replace(at, 6, "tp = 1");
  write_text(dir / "l8.toml", text);
  const auto ok =
      run_cli_split("schedule show " + (dir / "l8.toml").string() + " --gpus 64 --json --gpu-memory-gb 1000", dir);
  CHECK(ok.code == 0);
  CHECK(ok.out.find("\"dp\": 64,") != std::string::npos);
  CHECK(ok.out.find("\"tp\": 1,") != std::string::npos);
  const auto bad = run_cli_split("schedule show " + (dir / "l8.toml").string(), dir);
  CHECK(bad.code == 1);
  CHECK(bad.says("global_batch"));
  const auto odd = run_cli_split("schedule show " + (dir / "l8.toml").string() + " --gpus 48", dir);
  CHECK(odd.code == 1);
  CHECK(odd.says("(with --gpus 48)")); // the error names the override
}

TEST_CASE("overrides: --set changes a job key as the file would, values read as TOML", "[cli][overrides]") {
  const auto dir = scratch_dir("overrides-set");
  auto r = run_cli_split("schedule show --preset tiny-1f1b --json --set parallel.tp=4", dir);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("\"tp\": 4,") != std::string::npos);
  // a bare word is a string; several --set in order
  r = run_cli_split("schedule show --preset tiny-1f1b --json --set schedule.pipeline=interleaved --set parallel.vpp=2",
                    dir);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("\"vpp\": 2") != std::string::npos);
  CHECK(r.out.find("\"interleaved\"") != std::string::npos);
  r = run_cli_split("schedule show --preset tiny-1f1b --set 'schedule.pipeline=\"zb-h1\"'", dir);
  CHECK(r.code == 0);
}

TEST_CASE("overrides: --set errors name the override and the key, with a did-you-mean", "[cli][overrides]") {
  const auto dir = scratch_dir("overrides-errors");
  auto r = run_cli_split("schedule show --preset tiny-1f1b --set parallel.tpp=4", dir);
  CHECK(r.code == 1);
  CHECK(r.says("--set parallel.tpp=4"));
  CHECK(r.says("unknown key 'parallel.tpp'; did you mean 'parallel."));
  r = run_cli_split("schedule show --preset tiny-1f1b --set parallel.tp=0", dir);
  CHECK(r.code == 1);
  CHECK(r.says("key 'parallel.tp'"));
  r = run_cli_split("schedule show --preset tiny-1f1b --set parallel.tp", dir);
  CHECK(r.code == 1);
  CHECK(r.says("expected KEY=VALUE"));
  r = run_cli_split("schedule show --preset tiny-1f1b --set parallel.tp.x=1", dir);
  CHECK(r.code == 1);
  CHECK(r.says("'parallel.tp' holds a value"));
  r = run_cli_split("simulate --preset tiny-1f1b --mode analytic --set cluster.server.nicz=4", dir);
  CHECK(r.code == 1);
  CHECK(r.says("--set cluster.server.nicz=4"));
  CHECK(r.says("did you mean 'server.nic"));
}

TEST_CASE("overrides: --set cluster keys reach the simulated cluster", "[cli][overrides]") {
  const auto dir = scratch_dir("overrides-cluster");
  const auto base = run_cli_split("simulate --preset tiny-1f1b --mode analytic --json", dir);
  const auto fast =
      run_cli_split("simulate --preset tiny-1f1b --mode analytic --json --set cluster.gpu.model=H100-SXM", dir);
  REQUIRE(base.code == 0);
  REQUIRE(fast.code == 0);
  CHECK(base.out != fast.out); // faster GPUs, another iteration time
}

TEST_CASE("overrides: topology show and ecmp take --set on the cluster, with or without the cluster prefix",
          "[cli][overrides]") {
  const auto dir = scratch_dir("overrides-topology");
  const auto base = run_cli_split("topology show --preset tiny-2tier", dir);
  const auto four = run_cli_split("topology show --preset tiny-2tier --set server.nics=4", dir);
  const auto prefixed = run_cli_split("topology show tiny-2tier --set cluster.server.nics=4", dir);
  REQUIRE(base.code == 0);
  REQUIRE(four.code == 0);
  CHECK_THAT(base.out, Catch::Contains("8 NICs"));
  CHECK_THAT(four.out, Catch::Contains("4 NICs"));
  CHECK(prefixed.out == four.out);
  const auto ecmp = run_cli_split("topology ecmp tiny-2tier --job 2x2x2 --set server.nics=4", dir);
  CHECK(ecmp.code == 0);
  const auto bad = run_cli_split("topology show tiny-2tier --set server.nicz=4", dir);
  CHECK(bad.code == 1);
  CHECK_THAT(bad.err, Catch::Contains("nicz"));
}

TEST_CASE("overrides: simulate-jobs takes --set cluster.KEY=VALUE and refuses a job key, saying where jobs live",
          "[cli][overrides]") {
  const auto dir = scratch_dir("overrides-jobs");
  const std::string study = std::string(TWINSCALE_SOURCE_DIR) + "/experiments/multi_job/two-jobs-tor-aware.toml";
  const auto base = run_cli_split("simulate-jobs " + study + " --json --quiet", dir);
  const auto fast = run_cli_split("simulate-jobs " + study + " --json --quiet --set cluster.gpu.model=H100-SXM", dir);
  REQUIRE(base.code == 0);
  REQUIRE(fast.code == 0);
  CHECK(base.out != fast.out); // faster GPUs, other iteration times
  const auto job_key = run_cli_split("simulate-jobs " + study + " --set parallel.tp=2", dir);
  CHECK(job_key.code == 1);
  CHECK_THAT(job_key.err, Catch::Contains("--set parallel.tp=2") && Catch::Contains("cluster keys only"));
}

TEST_CASE("TP overlap without TP chunks is refused naming both keys", "[cli][overrides]") {
  const auto dir = scratch_dir("overrides-overlap");
  auto r = run_cli_split("schedule show --preset tiny-1f1b --set schedule.overlap.tp=true", dir);
  CHECK(r.code == 1);
  CHECK(r.says("schedule.overlap.tp"));
  CHECK(r.says("schedule.overlap.tp_chunks"));
  r = run_cli_split(
      "schedule show --preset tiny-1f1b --set schedule.overlap.tp=true --set schedule.overlap.tp_chunks=2", dir);
  CHECK(r.code == 0);
}

TEST_CASE("preset show prints a preset's TOML, which reads back as the preset", "[cli][presets]") {
  const auto dir = scratch_dir("preset-show");
  const auto toml = run_cli_split("preset show tiny-1f1b", dir);
  REQUIRE(toml.code == 0);
  CHECK(toml.out.find("name = \"tiny-1f1b\"") != std::string::npos);
  write_text(dir / "t.toml", toml.out);
  const auto from_file = run_cli_split("schedule show " + (dir / "t.toml").string(), dir);
  const auto from_preset = run_cli_split("schedule show --preset tiny-1f1b", dir);
  REQUIRE(from_file.code == 0);
  CHECK(from_file.out == from_preset.out);
  auto r = run_cli_split("preset show llama3-405b", dir); // a job and a fault model
  CHECK(r.code == 1);
  CHECK(r.says("--kind"));
  CHECK(run_cli_split("preset show llama3-405b --kind faults", dir).code == 0);
  CHECK(run_cli_split("preset show megascale --kind recovery", dir).code == 0);
  r = run_cli_split("preset show no-such", dir);
  CHECK(r.code == 1);
  CHECK(r.says("tiny-1f1b"));
  CHECK(run_cli_split("preset list", dir).out.find("clusters: ") != std::string::npos);
}
