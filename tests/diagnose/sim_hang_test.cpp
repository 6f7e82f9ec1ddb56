// Simulated hangs as ground truth: `simulate --hang-rank R --run-dir DIR`
// writes the real backend's per-rank state files, and `twinscale diagnose DIR` names R
// first (exit 4) with the op its peers are stuck in; bad hang options exit 1.
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli_runner.hpp"

using namespace twinscale;
namespace fs = std::filesystem;

namespace {

const std::string kJob = "--preset tiny-1f1b --gpus 32 --global-batch 32 --mode analytic --every-rank";

} // namespace

TEST_CASE("sim hang: the rank that stops issuing ops is the first hang diagnose names") {
  const fs::path dir = test::scratch_dir("sim-hang");
  auto ok = test::run_cli_split("simulate " + kJob + " --json", dir);
  REQUIRE(ok.code == 0);
  const double iteration = nlohmann::json::parse(ok.out).at("iteration_time_s").get<double>();
  const fs::path run = dir / "run";
  auto sim = test::run_cli_split("simulate " + kJob + " --hang-rank 13 --hang-at-s " + std::to_string(iteration / 2) +
                                     " --run-dir " + run.string() + " --json",
                                 dir);
  INFO(sim.out << sim.err);
  REQUIRE(sim.code == 5); // the job did not complete: records written, no throughput
  const auto s = nlohmann::json::parse(sim.out);
  CHECK(s["completed"] == false);
  CHECK(s["iteration_time_s"].is_null());
  CHECK(s["tokens_per_s"].is_null());
  CHECK(s["mfu"].is_null());
  CHECK(s["makespan_s"].get<double>() > 0);
  CHECK(s["hang"]["rank"] == 13);
  CHECK(s["hang"]["waiting_ranks"].get<int64_t>() > 0);
  CHECK_THAT(sim.err, Catch::Contains("rank 13 hung") && Catch::Contains("did not complete"));
  for (int r = 0; r < 32; ++r) CHECK(fs::exists(run / ("rank-" + std::to_string(r) + ".json")));

  auto d = test::run_cli_split("diagnose " + run.string() + " --json", dir);
  INFO(d.out << d.err);
  REQUIRE(d.code == 4);
  const auto j = nlohmann::json::parse(d.out);
  REQUIRE(!j.at("findings").empty());
  CHECK(j["findings"][0]["kind"] == "hang");
  CHECK(j["findings"][0]["ranks"] == nlohmann::json::array({13}));
  CHECK_THAT(j["findings"][0]["detail"].get<std::string>(), Catch::Contains("wait on it") && Catch::Contains(" on "));
  // one hang, one finding: every waiting rank is listed under it, none reported as a hang of its own
  int64_t hangs = 0;
  for (const auto& f : j["findings"]) hangs += f["kind"] == "hang" ? 1 : 0;
  CHECK(hangs == 1);
  CHECK(static_cast<int64_t>(j["findings"][0]["blocked_ranks"].size()) == s["hang"]["waiting_ranks"].get<int64_t>());

  // The same run with the hung rank silent (a stopped process writes nothing).
  fs::remove(run / "rank-13.json");
  d = test::run_cli_split("diagnose " + run.string() + " --world 32 --json", dir);
  REQUIRE(d.code == 4);
  CHECK(nlohmann::json::parse(d.out)["findings"][0]["ranks"] == nlohmann::json::array({13}));
  fs::remove_all(dir);
}

TEST_CASE("sim hang: bad hang options exit 1 naming the option and what is valid") {
  const fs::path dir = test::scratch_dir("sim-hang-bad");
  auto r = test::run_cli_split("simulate " + kJob + " --hang-rank 32", dir);
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("--hang-rank 32 outside the world 0..31"));
  r = test::run_cli_split("simulate --preset tiny-1f1b --mode analytic --hang-rank 1", dir);
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("--every-rank"));
  r = test::run_cli_split("simulate --preset tiny-1f1b --mode flow --every-rank --hang-rank 1", dir);
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("--mode analytic"));
  r = test::run_cli_split("simulate " + kJob + " --run-dir " + (dir / "x").string(), dir);
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("--hang-rank"));
  fs::remove_all(dir);
}

TEST_CASE("sim hang: the table of an incomplete run reports no throughput and exits 5") {
  const fs::path dir = test::scratch_dir("sim-hang-table");
  auto ok = test::run_cli_split("simulate " + kJob + " --json", dir);
  REQUIRE(ok.code == 0);
  const double iteration = nlohmann::json::parse(ok.out).at("iteration_time_s").get<double>();
  auto sim =
      test::run_cli_split("simulate " + kJob + " --hang-rank 3 --hang-at-s " + std::to_string(iteration / 2), dir);
  INFO(sim.out << sim.err);
  CHECK(sim.code == 5);
  CHECK_THAT(sim.out, Catch::Contains("JOB FAILED") && Catch::Contains("did not complete"));
  CHECK_THAT(sim.out, !Catch::Contains("TFLOP/s per GPU") && !Catch::Contains("tokens/s    "));
  // a hang after the last op leaves a completed iteration: exit 0 with its figures
  auto late =
      test::run_cli_split("simulate " + kJob + " --hang-rank 3 --hang-at-s " + std::to_string(iteration * 10), dir);
  INFO(late.out << late.err);
  CHECK(late.code == 0);
  CHECK_THAT(late.out, Catch::Contains("TFLOP/s per GPU"));
}

TEST_CASE("sim hang: a run directory states its layout, and diagnose reads it instead of asking for --layout") {
  const fs::path dir = test::scratch_dir("sim-hang-layout");
  const fs::path run = dir / "run";
  auto sim = test::run_cli_split("simulate " + kJob + " --hang-rank 13 --hang-at-s 0.001 --run-dir " + run.string() +
                                     " --trace " + (run / "trace.json").string(),
                                 dir);
  REQUIRE(sim.code == 5);
  const auto layout = nlohmann::json::parse(test::slurp(run / "layout.json"));
  CHECK(layout == nlohmann::json::parse(R"({"format": "twinscale-layout", "format_version": 1, "tp": 2, "cp": 1,
                                            "ep": 1, "dp": 8, "pp": 2, "world": 32})"));
  const auto notes_of = [&] {
    const auto d = test::run_cli_split("diagnose " + run.string() + " --json", dir);
    REQUIRE(d.code == 4);
    return nlohmann::json::parse(d.out)["notes"].dump();
  };
  CHECK(notes_of().find("--layout") == std::string::npos);
  fs::remove(run / "layout.json"); // a directory without it: the layout is asked for, as before
  CHECK(notes_of().find("--layout") != std::string::npos);
  fs::remove_all(dir);
}
