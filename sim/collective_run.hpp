// One collective on its own, as nccl-tests runs it: a group of GPUs placed on the
// fabric, one collective of a given size, its time, algorithm bandwidth and bus
// bandwidth. The collective goes through the same executor, plans and backends as a
// training iteration (a one-op schedule), so what `twinscale collective` prints is what
// the simulator charges a training job for that collective.
//
//   sim::CollectiveRunResult r = sim::run_collective(fabric, OpKind::AllReduce, gpus, 1 << 30, options);
//   // r.time_s, r.algbw_bytes_per_s, r.busbw_bytes_per_s, r.protocol, r.channels
#pragma once

#include <cstdint>
#include <vector>

#include "schedules/op.hpp"
#include "sim/simulate.hpp"
#include "topology/fabric.hpp"

namespace twinscale::sim {

struct CollectiveRunResult {
  double bytes = 0;
  double time_s = 0;
  double algbw_bytes_per_s = 0; // bytes / time
  double busbw_bytes_per_s = 0; // algbw × nccl_bus_factor
  NcclProtocol protocol = NcclProtocol::Simple;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  int64_t channels = 1;
  int64_t servers = 1;
  int64_t flows = 0; // flow mode: flows put on the fabric
};

/// The GPUs of a group of `gpus` GPUs, `gpus_per_server` on each of consecutive servers
/// (GPUs 0..gpus_per_server−1 of each). Throws SimError when gpus is not a
/// positive multiple of gpus_per_server or gpus_per_server exceeds `server_gpus`.
std::vector<int64_t> collective_gpus(int64_t gpus, int64_t gpus_per_server, int64_t server_gpus);

/// Runs collective `kind` of `bytes` (nccl-tests conventions, collective_algorithms.hpp)
/// over `gpus` (group order) on `fabric`. Throws SimError for a
/// non-collective kind, fewer than two GPUs, a GPU outside the fabric or a repeated GPU.
CollectiveRunResult run_collective(const topology::Fabric& fabric, schedules::OpKind kind,
                                   const std::vector<int64_t>& gpus, double bytes, const SimOptions& options);

} // namespace twinscale::sim
