// The scenario step (config/scenario.hpp): what it builds follows from its inputs, and
// each enum name users type is parsed in one place with errors that name the option.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>

#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "config/job_file.hpp"
#include "config/scenario.hpp"
#include "schedules/error.hpp"

using namespace twinscale;

namespace {

config::ScenarioSpec tiny_spec() {
  config::ScenarioSpec spec;
  spec.job = config::load_job_preset("tiny-megascale");
  spec.job_source = "preset tiny-megascale";
  spec.sim.mode = sim::SimMode::Analytic;
  return spec;
}

} // namespace

TEST_CASE("scenario: enum names parse both ways, a bad name lists the valid ones", "[config][scenario]") {
  for (const auto& name : config::placement_names())
    CHECK(config::placement_name(config::parse_placement(name, "--placement")) == name);
  CHECK(config::parse_placement("tor-aware", "x") == topology::PlacementPolicy::TorAware);
  CHECK(config::parse_sim_mode("analytic", "x") == sim::SimMode::Analytic);
  CHECK(config::parse_sim_mode("flow", "x") == sim::SimMode::Flow);
  CHECK(config::parse_all_reduce_algorithm("tree", "x") == sim::CollectiveAlgorithm::Tree);
  CHECK(config::sim_mode_names().size() == 2);
  CHECK(config::all_reduce_algorithm_names().size() == 2);
  try {
    config::parse_placement("everywhere", "--placement");
    FAIL("no error");
  } catch (const config::ConfigError& e) {
    const std::string m = e.what();
    CHECK(m.find("--placement 'everywhere'") != std::string::npos);
    CHECK(m.find("linear, tor-aware, random") != std::string::npos);
  }
  CHECK_THROWS_WITH(config::parse_sim_mode("warp", "--sim-mode"),
                    Catch::Contains("--sim-mode 'warp'") && Catch::Contains("flow, analytic"));
  CHECK_THROWS_AS(config::parse_all_reduce_algorithm("butterfly", "--algorithm"), config::ConfigError);
}

TEST_CASE("scenario: fabric, schedule and placement follow from job, cluster and seed", "[config][scenario]") {
  auto spec = tiny_spec();
  const int64_t gpus = spec.job.parallel.gpus();
  const config::Scenario linear(spec);
  CHECK(linear.cluster_name() == spec.job.cluster); // no --cluster: the job's
  CHECK(linear.fabric().gpus() == gpus);            // the fabric is built for the job's GPUs
  CHECK(linear.schedule().world() == gpus);
  REQUIRE(linear.gpu_of_rank().size() == static_cast<size_t>(gpus));
  for (int64_t r = 0; r < gpus; ++r) CHECK(linear.gpu_of_rank()[r] == r); // linear: rank r on GPU r
  CHECK(linear.options().mode == sim::SimMode::Analytic);
  CHECK(linear.options().calibration == nullptr);
  CHECK(linear.options().faults == nullptr);

  spec.placement = topology::PlacementPolicy::Random;
  spec.seed = 7;
  const config::Scenario random(spec);
  CHECK(random.options().seed == 7);
  const std::set<int64_t> used(random.gpu_of_rank().begin(), random.gpu_of_rank().end());
  CHECK(used.size() == static_cast<size_t>(gpus)); // one rank per GPU
  CHECK(*used.rbegin() < random.fabric().gpus());
  // The same seed gives the same placement; the report is the simulator's on these inputs.
  const config::Scenario again(spec);
  CHECK(again.gpu_of_rank() == random.gpu_of_rank());
  const auto r = random.simulate();
  CHECK(r.completed);
  CHECK(r.iteration_time_s ==
        sim::simulate(random.schedule(), random.fabric(), random.gpu_of_rank(), random.options()).iteration_time_s);

  spec.cluster = "tiny-3tier"; // an explicit cluster wins over the job's
  const config::Scenario other(spec);
  CHECK(other.cluster_name() == "tiny-3tier");
  CHECK(other.cluster().name == config::load_cluster("tiny-3tier").name);
}

TEST_CASE("scenario: the memory check uses the cluster's GPU unless overridden", "[config][scenario][errors]") {
  auto spec = tiny_spec();
  spec.gpu_memory_bytes = 1e6; // far below the tiny job's footprint
  CHECK_THROWS_AS(config::Scenario(spec), schedules::JobError);
  spec.gpu_memory_bytes = 0;
  CHECK_THROWS_WITH(config::Scenario(spec), Catch::Contains("--gpu-memory-gb"));
}

TEST_CASE("scenario: bad inputs name their source", "[config][scenario][errors]") {
  auto spec = tiny_spec();
  spec.job.cluster.clear();
  CHECK_THROWS_WITH(config::Scenario(spec), Catch::Contains("preset tiny-megascale: no cluster"));
  spec = tiny_spec();
  spec.cluster = "no-such-cluster";
  CHECK_THROWS_WITH(config::Scenario(spec), Catch::Contains("no-such-cluster"));
  spec = tiny_spec();
  spec.calibration_file = "/nonexistent/cal.json";
  CHECK_THROWS_WITH(config::Scenario(spec), Catch::Contains("/nonexistent/cal.json"));
  spec = tiny_spec();
  spec.faults_file = "/nonexistent/plan.toml";
  CHECK_THROWS_WITH(config::Scenario(spec), Catch::Contains("/nonexistent/plan.toml"));
}
