// Placement policies. Unit of placement: a server "slot" of gpus_per_server/TP whole TP
// groups in Megatron order (rank = tp + TP·(dp + DP·pp)); so TP never leaves a server.
//  * Linear: slot k on server k (rank r on GPU r).
//  * TorAware (M10): the DP groups of one pipeline stage (one "stage block" of DP·TP
//    GPUs, the ring that carries the gradient traffic) are kept under as few ToR groups
//    as possible: a block that fits a server group never straddles two; consecutive
//    stages (the PP neighbours) follow each other. Falls back to Linear packing when
//    alignment would not fit in the cluster.
//  * Random: the cluster's servers in a seeded random order (a fragmented cluster).
#include "topology/placement.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "topology/detail/hash.hpp"

namespace twinscale::topology {

namespace {

std::string shape_text(const JobShape& s) {
  return "TP " + std::to_string(s.tp) + " × DP " + std::to_string(s.dp) + " × PP " + std::to_string(s.pp);
}

/// Servers (in order) that the job's slots go to, under TorAware alignment, or empty if
/// alignment does not fit.
std::vector<int64_t> tor_aware_servers(const Fabric& f, int64_t servers_needed, int64_t block_servers) {
  const ClosShape& s = f.shape();
  const int64_t spt = s.servers_per_tor;
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(servers_needed));
  int64_t next = 0; // next free server
  while (static_cast<int64_t>(out.size()) < servers_needed) {
    const int64_t used_in_group = next % spt;
    const int64_t room = spt - used_in_group;
    // A stage block that fits one group but not the rest of this one starts a new group;
    // one larger than a group starts at a group boundary.
    if (used_in_group != 0 && (block_servers > room)) next += room;
    if (next + block_servers > s.servers) return {};
    for (int64_t i = 0; i < block_servers; ++i) out.push_back(next++);
  }
  return out;
}

} // namespace

std::vector<int64_t> place(const Fabric& fabric, const JobShape& shape, PlacementPolicy policy, uint64_t seed) {
  const ClosShape& s = fabric.shape();
  if (shape.tp < 1 || shape.dp < 1 || shape.pp < 1)
    throw TopologyError("job shape " + shape_text(shape) + ": every dimension must be ≥ 1");
  if (shape.tp > s.gpus_per_server || s.gpus_per_server % shape.tp != 0)
    throw TopologyError("job shape " + shape_text(shape) + ": TP " + std::to_string(shape.tp) + " must divide the " +
                        std::to_string(s.gpus_per_server) + " GPUs of a server of cluster '" + fabric.spec().name +
                        "' (TP groups stay inside a server)");
  int64_t tp_dp = 0, ranks = 0; // checked: a shape from input may overflow int64
  if (__builtin_mul_overflow(shape.tp, shape.dp, &tp_dp) || __builtin_mul_overflow(tp_dp, shape.pp, &ranks) ||
      ranks > fabric.gpus())
    throw TopologyError("job shape " + shape_text(shape) + " needs " +
                        (ranks > 0 ? std::to_string(ranks) : std::string("more than 2^63")) + " GPUs; cluster '" +
                        fabric.spec().name + "' has " + std::to_string(fabric.gpus()));
  const int64_t tp_per_server = s.gpus_per_server / shape.tp;
  const int64_t tp_groups = shape.dp * shape.pp;
  const int64_t servers_needed = (tp_groups + tp_per_server - 1) / tp_per_server;

  std::vector<int64_t> server_of_slot;
  switch (policy) {
  case PlacementPolicy::Linear:
    server_of_slot.resize(static_cast<size_t>(servers_needed));
    std::iota(server_of_slot.begin(), server_of_slot.end(), int64_t{0});
    break;
  case PlacementPolicy::TorAware: {
    const int64_t block_servers = (shape.dp * shape.tp + s.gpus_per_server - 1) / s.gpus_per_server;
    if (shape.dp * shape.tp % s.gpus_per_server == 0)
      server_of_slot = tor_aware_servers(fabric, servers_needed, block_servers);
    if (server_of_slot.empty()) {
      server_of_slot.resize(static_cast<size_t>(servers_needed));
      std::iota(server_of_slot.begin(), server_of_slot.end(), int64_t{0});
    }
    break;
  }
  case PlacementPolicy::Random: {
    std::vector<int64_t> all(static_cast<size_t>(s.servers));
    std::iota(all.begin(), all.end(), int64_t{0});
    detail::SplitMix rng(seed ^ 0x7a1e5c0de5eedULL);
    for (size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[rng.below(i)]);
    server_of_slot.assign(all.begin(), all.begin() + servers_needed);
    break;
  }
  }

  std::vector<int64_t> gpu_of_rank(static_cast<size_t>(ranks));
  for (int64_t g = 0; g < tp_groups; ++g) {
    const int64_t server = server_of_slot[static_cast<size_t>(g / tp_per_server)];
    const int64_t first_gpu = server * s.gpus_per_server + (g % tp_per_server) * shape.tp;
    for (int64_t t = 0; t < shape.tp; ++t) gpu_of_rank[static_cast<size_t>(g * shape.tp + t)] = first_gpu + t;
  }
  return gpu_of_rank;
}

} // namespace twinscale::topology
