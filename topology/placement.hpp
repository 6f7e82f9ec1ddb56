// Placement: which GPU each rank runs on. TP groups always stay inside a server.
// An input to both executors.
#pragma once

#include <cstdint>
#include <vector>

#include "common/enum_names.hpp"
#include "topology/fabric.hpp"

namespace twinscale::topology {

/// The 3D-parallel shape of a job, ranks in Megatron's tp-dp-pp order
/// (rank = tp + TP·(dp + DP·pp)); kept here as plain numbers because topology/
/// depends on nothing else of ours.
struct JobShape {
  int64_t tp = 1;
  int64_t dp = 1;
  int64_t pp = 1;
};

enum class PlacementPolicy : uint8_t {
  Linear,   // rank r on GPU r
  TorAware, // the groups that talk most (DP rings, PP neighbours) under the same ToR (M10)
  Random,   // a fragmented cluster: servers shuffled with `seed`
};
/// The placement names of job files, study files and the command line.
inline constexpr EnumNames<PlacementPolicy, 3> kPlacementPolicyNames{{{"linear", PlacementPolicy::Linear},
                                                                      {"tor-aware", PlacementPolicy::TorAware},
                                                                      {"random", PlacementPolicy::Random}}};

/// gpu_of_rank[r] for every rank of `shape`. Throws TopologyError if the job needs
/// more GPUs than the fabric has or TP does not fit a server.
std::vector<int64_t> place(const Fabric& fabric, const JobShape& shape, PlacementPolicy policy, uint64_t seed);

} // namespace twinscale::topology
