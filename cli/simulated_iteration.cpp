#include "cli/detail/simulated_iteration.hpp"

#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "schedules/schedule.hpp"
#include "sim/estimate.hpp"
#include "sim/simulate.hpp"
#include "topology/fabric.hpp"
#include "topology/placement.hpp"

namespace twinscale::cli::detail {

SimulatedIteration simulate_iteration(const schedules::JobSpec& job, const std::string& cluster,
                                      const std::string& mode, const std::string& placement, uint64_t seed) {
  SimulatedIteration out;
  out.cluster = cluster.empty() ? job.cluster : cluster;
  out.mode = mode;
  out.placement = placement;
  out.seed = seed;
  if (out.cluster.empty())
    throw config::ConfigError("job '" + job.name +
                              "' has no cluster: give --cluster NAME|FILE, or --iteration-time S to skip the simulator");
  if (mode != "analytic" && mode != "flow")
    throw config::ConfigError("--sim-mode '" + mode + "': valid modes are analytic, flow");

  sim::check_simulation_fits(job, mode == "flow" ? sim::SimMode::Flow : sim::SimMode::Analytic, true);
  topology::ClusterSpec spec = config::load_cluster(out.cluster);
  spec.gpus = job.parallel.gpus(); // the fabric is built for the job's GPUs (as `simulate` does)
  const topology::Fabric fabric(spec);

  schedules::LoweringTarget target;
  if (spec.gpu.memory_bytes > 0) target.gpu_memory_bytes = spec.gpu.memory_bytes;
  const schedules::Schedule schedule = schedules::lower(job, target);

  topology::PlacementPolicy policy = topology::PlacementPolicy::Linear;
  if (placement == "tor-aware") policy = topology::PlacementPolicy::TorAware;
  else if (placement == "random") policy = topology::PlacementPolicy::Random;
  else if (placement != "linear")
    throw config::ConfigError("--placement '" + placement + "': valid placements are linear, tor-aware, random");
  const auto gpus =
      topology::place(fabric, {schedule.layout.tp, schedule.layout.dp, schedule.layout.pp}, policy, seed);

  sim::SimOptions o;
  o.mode = mode == "flow" ? sim::SimMode::Flow : sim::SimMode::Analytic;
  o.seed = seed;
  const sim::SimReport r = sim::simulate(schedule, fabric, gpus, o);
  if (!r.completed || !(r.iteration_time_s > 0))
    throw config::ConfigError("job '" + job.name + "' did not complete in the simulator (" + r.failure +
                              "); give --iteration-time S");
  out.iteration_time_s = r.iteration_time_s;
  out.mfu = r.mfu;
  out.wall_s = r.wall_s;
  return out;
}

} // namespace twinscale::cli::detail
