// What a sweep reuses from point to point (the routed flows of its closed forms, kept per
// fabric; the schedule of points that differ only in cluster, placement or campaign axes)
// changes no figure: a sweep stores the same bytes with and without it
// (TWINSCALE_PER_OP=1 turns every reuse off), and each point stores what `twinscale
// simulate --json` prints for its layout. Every job preset prints the same `simulate
// --json` with and without TWINSCALE_PER_OP=1, to the last digit.
#include <cstdlib>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "config/presets.hpp"
#include "study/store.hpp"
#include "tests/backend/mpi_helpers.hpp"
#include "tests/cli_runner.hpp"

using namespace twinscale;
namespace bt = twinscale::backend::test;

namespace {

/// Runs `args` with TWINSCALE_PER_OP=1 in the environment (every reuse off).
test::CliResult run_per_op(const std::string& args, test::Capture capture) {
  ::setenv("TWINSCALE_PER_OP", "1", 1);
  auto r = test::run_cli(args, capture);
  ::unsetenv("TWINSCALE_PER_OP");
  return r;
}

/// Every figure a store keeps of a point, compared exactly (doubles bit for bit).
void check_same_point(const study::PointResult& a, const study::PointResult& b) {
  CHECK(a.status == b.status);
  CHECK(a.reason == b.reason);
  CHECK(a.tp == b.tp);
  CHECK(a.pp == b.pp);
  CHECK(a.micro_batch == b.micro_batch);
  CHECK(a.memory_bytes == b.memory_bytes);
  CHECK(a.ops == b.ops);
  CHECK(a.iteration_time_s == b.iteration_time_s);
  CHECK(a.tokens_per_s == b.tokens_per_s);
  CHECK(a.tflops_per_gpu == b.tflops_per_gpu);
  CHECK(a.mfu == b.mfu);
  CHECK(a.compute_s == b.compute_s);
  CHECK(a.exposed_tp_s == b.exposed_tp_s);
  CHECK(a.exposed_pp_s == b.exposed_pp_s);
  CHECK(a.exposed_dp_s == b.exposed_dp_s);
  CHECK(a.bubble_s == b.bubble_s);
}

/// The figures `simulate --json` prints of the point's layout, compared exactly.
void check_same_as_simulate(const study::PointResult& p) {
  const auto r =
      test::run_cli("simulate --preset tiny-megascale --gpus 32 --global-batch 64 --set parallel.vpp=1 "
                    "--set schedule.pipeline=1f1b --set parallel.tp=" +
                        std::to_string(p.tp) + " --set parallel.pp=" + std::to_string(p.pp) +
                        " --set parallel.micro_batch=" + std::to_string(p.micro_batch) + " --mode analytic --json",
                    test::Capture::StdoutOnly);
  REQUIRE(r.rc == 0);
  const auto sim = nlohmann::json::parse(r.out);
  CHECK(p.iteration_time_s == sim.at("iteration_time_s").get<double>());
  CHECK(p.tokens_per_s == sim.at("tokens_per_s").get<double>());
  CHECK(p.mfu == sim.at("mfu").get<double>());
  const auto& b = sim.at("breakdown");
  CHECK(p.compute_s == b.at("compute_s").get<double>());
  CHECK(p.exposed_tp_s == b.at("exposed_tp_s").get<double>());
  CHECK(p.exposed_pp_s == b.at("exposed_pp_s").get<double>());
  CHECK(p.exposed_dp_s == b.at("exposed_dp_s").get<double>());
  CHECK(p.bubble_s == b.at("bubble_s").get<double>());
}

/// The study swept twice, with every reuse on and with TWINSCALE_PER_OP=1: the two stores' rows.
std::pair<std::vector<study::StoredPoint>, std::vector<study::StoredPoint>>
sweep_with_and_without_reuse(const std::string& dir, const std::string& study) {
  const auto shared =
      test::run_cli("sweep " + study + " --db " + dir + "/shared.db --progress never", test::Capture::StdoutAndStderr);
  INFO(shared.out);
  REQUIRE(shared.rc == 0);
  const auto per_op =
      run_per_op("sweep " + study + " --db " + dir + "/per-op.db --progress never", test::Capture::StdoutAndStderr);
  INFO(per_op.out);
  REQUIRE(per_op.rc == 0);
  return {study::Store(dir + "/shared.db").rows(), study::Store(dir + "/per-op.db").rows()};
}

} // namespace

TEST_CASE("sweep: points sharing a fabric store the same figures with and without reused routes, and what simulate "
          "prints",
          "[study][cli]") {
  const std::string dir = bt::fresh_dir("shared-routes");
  const std::string study = dir + "/study.toml";
  // one fabric (32 GPUs of tiny-2tier) for every point; layouts with DP, TP and PP groups
  test::write_text(study, "name = \"shared-routes\"\n[base]\njob = \"tiny-megascale\"\ngpus = 32\nglobal_batch = 64\n"
                          "[axes]\ntp = [1, 2, 4]\npp = [1, 2]\nvpp = [1]\nmicro_batch = [1, 2]\n"
                          "[evaluate]\nwhat = \"simulate\"\nmode = \"analytic\"\n");
  const auto [a, b] = sweep_with_and_without_reuse(dir, study);
  REQUIRE(a.size() == 12);
  REQUIRE(b.size() == a.size());
  int ok = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("point " << a[i].inputs);
    check_same_point(a[i].result, b[i].result);
    if (a[i].result.status != study::PointStatus::Ok) continue;
    ++ok;
    check_same_as_simulate(a[i].result);
  }
  CHECK(ok >= 8); // most layouts run: the comparison covers DP, TP and PP groups
  std::filesystem::remove_all(dir);
}

TEST_CASE("sweep: points that differ only in placement and seed axes share their schedule and store the same "
          "figures as without",
          "[study][cli]") {
  const std::string dir = bt::fresh_dir("shared-schedules");
  const std::string study = dir + "/study.toml";
  test::write_text(study, "name = \"shared-schedules\"\n[base]\njob = \"tiny-megascale\"\ngpus = 32\n"
                          "global_batch = 64\n[axes]\ntp = [1, 2]\npp = [1, 2]\nvpp = [1]\n"
                          "seed = [1, 2]\nplacement = [\"linear\", \"tor-aware\", \"random\"]\n"
                          "[evaluate]\nwhat = \"simulate\"\nmode = \"analytic\"\n");
  const auto [a, b] = sweep_with_and_without_reuse(dir, study);
  REQUIRE(a.size() == 24);
  REQUIRE(b.size() == a.size());
  int ok = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("point " << a[i].inputs);
    check_same_point(a[i].result, b[i].result);
    ok += a[i].result.status == study::PointStatus::Ok ? 1 : 0;
  }
  CHECK(ok >= 20);
  std::filesystem::remove_all(dir);
}

TEST_CASE("simulate: every job preset prints the same analytic json with every reuse off", "[study][cli]") {
  const auto presets = config::preset_names("jobs");
  REQUIRE(presets.size() >= 10);
  for (const auto& name : presets) {
    INFO("preset " << name);
    const std::string args = "simulate --preset " + name + " --mode analytic --json";
    const auto fast = test::run_cli(args, test::Capture::StdoutOnly);
    const auto slow = run_per_op(args, test::Capture::StdoutOnly);
    REQUIRE(fast.rc == 0);
    REQUIRE(slow.rc == 0);
    CHECK(nlohmann::json::parse(fast.out).contains("iteration_time_s"));
    CHECK(fast.out == slow.out);
  }
}
