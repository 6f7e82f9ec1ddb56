// Several jobs on one fabric: which servers each job gets. Jobs are placed in the order
// given, each on whole servers no other job holds, by its own policy:
//  * Linear: the lowest-numbered free servers;
//  * TorAware: only servers of ToR groups (server groups sharing one ToR per rail) that
//    no other job uses, whole groups in order, so no ToR and no ToR uplink carries two
//    jobs; the rest of its last group stays free for jobs of other policies;
//  * Random: free servers in a seeded random order (a fragmented cluster).
// Inside its servers a job's ranks are placed linearly (rank r on the r-th GPU of its
// server list), TP groups inside a server as topology::place does.
#pragma once

#include <cstdint>
#include <vector>

#include "topology/fabric.hpp"
#include "topology/placement.hpp"

namespace twinscale::topology {

struct JobRequest {
  int64_t gpus = 0;
  PlacementPolicy policy = PlacementPolicy::Linear;
  uint64_t seed = 1; // Random only
};

/// gpu_of_rank for every job, in request order. Throws TopologyError naming the job
/// (by index) when its GPUs are not a whole number of servers or the free servers (free
/// ToR groups for TorAware) do not hold it.
std::vector<std::vector<int64_t>> place_jobs(const Fabric& fabric, const std::vector<JobRequest>& jobs);

} // namespace twinscale::topology
