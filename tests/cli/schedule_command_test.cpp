// `twinscale schedule …` run as a process: exit codes 0 (ok), 1 (bad input), 2 (usage).
#include <catch2/catch.hpp>

#include "tests/cli_runner.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {
using Result = twinscale::test::CliOutput;
using twinscale::test::slurp;
using twinscale::test::write_text;

fs::path scratch() { return twinscale::test::scratch_dir("cli-test"); }

Result run(const std::string& args) { return twinscale::test::run_cli_split(args, scratch()); }
} // namespace

TEST_CASE("schedule show: preset, overrides, --json", "[cli]") {
  auto r = run("schedule show --preset tiny-1f1b");
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("ranks          8") != std::string::npos);
  CHECK(r.out.find("memory per rank") != std::string::npos);
  r = run("schedule show --preset gpt-175b-megascale --gpus 3072 --json");
  CHECK(r.code == 0);
  CHECK(r.out.find("\"ranks\": 3072") != std::string::npos);
  CHECK(r.out.find("\"model_flops_per_iteration\"") != std::string::npos);
}

TEST_CASE("schedule show: usage errors exit 2", "[cli]") {
  CHECK(run("schedule show").code == 2);
  CHECK(run("schedule show job.toml --preset tiny-1f1b").code == 2);
  CHECK(run("schedule show --preset tiny-1f1b --gpus x").code == 2);
  CHECK(run("schedule").code == 2);
  CHECK(run("schedule export --preset tiny-1f1b").code == 2); // --out missing
}

TEST_CASE("schedule show: bad input exits 1 with a message naming it", "[cli]") {
  auto r = run("schedule show --preset nope");
  CHECK(r.code == 1);
  CHECK(r.err.find("tiny-1f1b") != std::string::npos);
  r = run("schedule show --preset tiny-1f1b --gpus 12");
  CHECK(r.code == 1);
  CHECK(r.err.find("--gpus") != std::string::npos);
  const fs::path job = scratch() / "bad.toml";
  write_text(job, "name = \"x\"\ncluster = \"c\"\n[model]\nlayers = 3\nhidden = 64\nheads = 4\nseq_len = 16\n"
                  "vocab = 64\n[parallel]\npp = 2\ndp = 1\nglobal_batch = 2\n");
  r = run("schedule show " + job.string());
  CHECK(r.code == 1);
  CHECK(r.err.find("bad.toml") != std::string::npos);
  CHECK(r.err.find("model.layers") != std::string::npos);
  r = run("schedule show /nonexistent/job.toml");
  CHECK(r.code == 1);
  // the memory check: the cluster's GPU (80 GB here) unless --gpu-memory-gb
  r = run("schedule show --preset tiny-1f1b --gpu-memory-gb 0.01");
  CHECK(r.code == 1);
  CHECK(r.err.find("pipeline stage 0") != std::string::npos);
  r = run("schedule show --preset gpt-175b-megatron --gpu-memory-gb 40");
  CHECK(r.code == 1);
  CHECK(r.err.find("GB") != std::string::npos);
}

TEST_CASE("schedule export then validate, a broken file fails validation", "[cli]") {
  const fs::path dir = scratch();
  const fs::path file = dir / "tiny.json";
  fs::remove(file);
  auto r = run("schedule export --preset tiny-megascale --out " + file.string());
  INFO(r.err);
  REQUIRE(r.code == 0);
  REQUIRE(fs::exists(file));
  for (const auto& e : fs::directory_iterator(dir)) // no temporary left behind
    CHECK(e.path().string().find(".tmp.") == std::string::npos);
  r = run("schedule validate " + file.string());
  CHECK(r.code == 0);
  CHECK(r.out.find("valid") != std::string::npos);

  // give rank 3 (pp 0) the program of stage 1: its groups now disagree
  std::string text = slurp(file);
  const std::string key = "\"program_of_rank\":[0,0,0,0,";
  const auto at = text.find(key);
  REQUIRE(at != std::string::npos);
  text.replace(at, key.size(), "\"program_of_rank\":[0,0,0,1,");
  const fs::path broken = dir / "broken.json";
  write_text(broken, text);
  r = run("schedule validate " + broken.string());
  CHECK(r.code == 1);
  CHECK(r.out.find("rank 3") != std::string::npos); // its sends now target itself
  r = run("schedule validate --json " + broken.string());
  CHECK(r.code == 1);
  CHECK(r.out.find("\"valid\": false") != std::string::npos);

  write_text(broken, "{\"format\":\"twinscale-schedule\"");
  r = run("schedule validate " + broken.string());
  CHECK(r.code == 1);
  CHECK(r.err.find("broken.json") != std::string::npos);
  CHECK(run("schedule validate " + (dir / "missing.json").string()).code == 1);
  fs::remove_all(dir);
}
