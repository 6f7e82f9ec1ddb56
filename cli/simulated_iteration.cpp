#include "cli/detail/simulated_iteration.hpp"

#include "config/error.hpp"
#include "config/scenario.hpp"

namespace twinscale::cli::detail {

SimulatedIteration simulate_iteration(const schedules::JobSpec& job, const std::string& cluster,
                                      const std::string& mode, const std::string& placement, uint64_t seed,
                                      const std::vector<config::KeyOverride>& cluster_edits,
                                      std::optional<double> gpu_memory_bytes) {
  if (cluster.empty() && job.cluster.empty())
    throw config::ConfigError(
        "job '" + job.name + "' has no cluster: give --cluster NAME|FILE, or --iteration-time S to skip the simulator");
  config::ScenarioSpec spec;
  spec.job = job;
  spec.cluster = cluster;
  spec.cluster_edits = cluster_edits;
  spec.gpu_memory_bytes = gpu_memory_bytes;
  spec.sim.show_progress = true;
  spec.sim.mode = config::parse_sim_mode(mode, "--sim-mode");
  spec.placement = config::parse_placement(placement, "--placement");
  spec.seed = seed;
  const config::Scenario scenario(spec);
  const sim::SimReport r = scenario.simulate();
  if (!r.completed || !(r.iteration_time_s > 0))
    throw config::ConfigError("job '" + job.name + "' did not complete in the simulator (" + r.failure +
                              "); give --iteration-time S");
  SimulatedIteration out;
  out.cluster = scenario.cluster_name();
  out.mode = mode;
  out.placement = placement;
  out.seed = seed;
  out.iteration_time_s = r.iteration_time_s;
  out.mfu = r.mfu;
  out.wall_s = r.wall_s;
  return out;
}

} // namespace twinscale::cli::detail
