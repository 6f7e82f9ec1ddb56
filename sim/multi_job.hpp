// Several jobs at the same time on one fabric (flow mode). Each job keeps its own
// executor (its schedule, ranks, collectives, device model); their flows share one
// SimGrid platform, so they contend on every link they both cross, with the cluster's
// congestion control penalty (sim/congestion/). Run with one job, it is that job alone
// on the same GPUs: the reference for its slowdown.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedules/schedule.hpp"
#include "sim/simulate.hpp"
#include "topology/fabric.hpp"

namespace twinscale::sim {

struct JobOnFabric {
  std::string name;
  const schedules::Schedule* schedule = nullptr;
  std::vector<int64_t> gpu_of_rank; // fabric GPUs, disjoint from the other jobs'
  double start_s = 0;               // when it starts (≥ 0)
};

struct JobOutcome {
  std::string name;
  double iteration_time_s = 0; // makespan / iterations
  double makespan_s = 0;       // from its start to its last op's end
  bool completed = true;
  std::string failure;
};

/// A network link direction that carries bytes of two jobs or more.
struct SharedLink {
  uint32_t link = 0;
  bool up = true;
  std::vector<double> bytes_by_job;
};

struct MultiJobReport {
  std::vector<JobOutcome> jobs;
  std::vector<SharedLink> shared_links; // most contended first (by the smaller job's bytes)
  int64_t flows = 0;
  double wall_s = 0;
};

/// Runs the jobs together, each from its start_s, on `fabric`, flow mode (in a forked child, as
/// simulate() does). `options`: mode must be Flow; no fault plan, calibration or trace.
/// Throws SimError for overlapping GPUs, GPUs outside the fabric or refused options.
MultiJobReport simulate_jobs(const std::vector<JobOnFabric>& jobs, const topology::Fabric& fabric,
                             const SimOptions& options);

} // namespace twinscale::sim
