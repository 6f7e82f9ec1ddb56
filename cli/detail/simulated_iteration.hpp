// The simulated iteration time of a job, for commands that need one number (campaign,
// tune-checkpoint): lower the job, build the fabric of its cluster, place the ranks and
// run sim::simulate through the same config::Scenario as `twinscale simulate`, so the
// value equals `twinscale simulate --json`'s iteration_time_s.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/key_overrides.hpp"
#include "schedules/job.hpp"

namespace twinscale::cli::detail {

struct SimulatedIteration {
  double iteration_time_s = 0;
  double mfu = 0;
  std::string mode;      // "analytic" | "flow"
  std::string cluster;   // preset name or file the fabric was built from
  std::string placement; // "linear" | "tor-aware" | "random"
  uint64_t seed = 1;
  double wall_s = 0; // simulator wall time (for logs only)
};

/// `cluster` empty: the job's cluster. `mode`: "analytic" or "flow"; `placement`:
/// "linear", "tor-aware" or "random". Throws config::ConfigError for a job without a
/// cluster or a job that does not complete (the simulator runs without faults here).
/// `cluster_edits`: --set cluster.KEY=VALUE, made to the cluster's TOML. Progress of the
/// simulated ops on stderr (common/progress.hpp). `gpu_memory_bytes`: --gpu-memory-gb,
/// the memory the lowering checks against instead of the cluster's GPU.
SimulatedIteration simulate_iteration(const schedules::JobSpec& job, const std::string& cluster,
                                      const std::string& mode, const std::string& placement, uint64_t seed,
                                      const std::vector<config::KeyOverride>& cluster_edits = {},
                                      std::optional<double> gpu_memory_bytes = std::nullopt);

} // namespace twinscale::cli::detail
