// `twinscale simulate-jobs STUDY.toml` run as a process: two tiny jobs on tiny-3tier,
// the table and the JSON; bad study files exit 1 naming the file, key and what is valid.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_runner.hpp"

namespace fs = std::filesystem;

namespace {

fs::path scratch() { return twinscale::test::scratch_dir("jobs-cli"); }

twinscale::test::CliOutput run(const std::string& args) { return twinscale::test::run_cli_split(args, scratch()); }

fs::path study(const std::string& name, const std::string& text) {
  const fs::path p = scratch() / name;
  twinscale::test::write_text(p, text);
  return p;
}

const std::string kTwoJobs = R"(cluster = "tiny-3tier"
[[job]]
name = "a"
job = "tiny-megascale"
gpus = 16
placement = "tor-aware"
[[job]]
name = "b"
job = "tiny-megascale"
gpus = 16
placement = "tor-aware"
)";

} // namespace

TEST_CASE("simulate-jobs: two tor-aware jobs, table and JSON", "[cli][multi_job]") {
  const auto p = study("two.toml", kTwoJobs);
  auto r = run("simulate-jobs " + p.string());
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("2 jobs on tiny-3tier") != std::string::npos);
  CHECK(r.out.find("tor-aware") != std::string::npos);
  r = run("simulate-jobs " + p.string() + " --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["jobs"].size() == 2);
  CHECK(j["jobs"][0]["name"] == "a");
  CHECK(j["jobs"][0]["slowdown"].get<double>() == Approx(1.0)); // ToR groups of its own
  CHECK(j["shared_link_directions"] == 0);
}

TEST_CASE("simulate-jobs: bad studies exit 1 naming file and key", "[cli][multi_job]") {
  auto r = run("simulate-jobs " + study("none.toml", "cluster = \"tiny-3tier\"\n").string());
  CHECK(r.code == 1);
  CHECK(r.says("none.toml"));
  CHECK(r.says("[[job]]"));
  r = run("simulate-jobs " + study("place.toml", "cluster = \"tiny-3tier\"\n[[job]]\njob = \"tiny-megascale\"\n"
                                                 "gpus = 8\nplacement = \"packed\"\n")
                                 .string());
  CHECK(r.code == 1);
  CHECK(r.says("job[0].placement"));
  CHECK(r.says("linear, tor-aware, random"));
  r = run("simulate-jobs " +
          study("big.toml",
                "cluster = \"tiny-3tier\"\n[[job]]\njob = \"tiny-megascale\"\n"
                "gpus = 32\nglobal_batch = 16\n[[job]]\njob = \"tiny-megascale\"\ngpus = 32\nglobal_batch = 16\n"
                "[[job]]\njob = \"tiny-megascale\"\ngpus = 8\n")
              .string());
  CHECK(r.code == 1);
  CHECK(r.says("job 2 (8 GPUs)"));
  CHECK(r.says("0 are free"));
  r = run("simulate-jobs " + study("batch.toml", "cluster = \"tiny-3tier\"\n[[job]]\njob = \"tiny-megascale\"\n"
                                                 "gpus = 32\n")
                                 .string());
  CHECK(r.code == 1);
  CHECK(r.says("batch.toml"));
  CHECK(r.says("job[0].gpus"));
  r = run("simulate-jobs " + study("start.toml", "cluster = \"tiny-3tier\"\n[[job]]\njob = \"tiny-megascale\"\n"
                                                 "gpus = 8\nstart_s = -1\n")
                                 .string());
  CHECK(r.code == 1);
  CHECK(r.says("start.toml"));
  CHECK(r.says("job[0].start_s"));
}

TEST_CASE("simulate-jobs: a late job with several iterations", "[cli][multi_job]") {
  std::string text = kTwoJobs + "iterations = 2\nstart_s = 0.5\n";
  auto r = run("simulate-jobs " + study("late.toml", text).string() + " --json");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["jobs"].size() == 2);
  CHECK(j["jobs"][1]["slowdown"].get<double>() == Approx(1.0)); // tor-aware: alone
  CHECK(j["jobs"][1]["completed"] == true);
}
