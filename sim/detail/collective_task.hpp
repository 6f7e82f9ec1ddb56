// From a collective op to what a backend runs: the plan of its group (NCCL's channels,
// rings or trees, and the protocol NCCL's tuner picks for its size), then either a
// closed-form duration or the flows of every image group. The executor decides *which*
// groups run a collective; this decides *what traffic* that is.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sim/collective_algorithms.hpp"
#include "sim/detail/network_paths.hpp"
#include "sim/detail/time_engine.hpp"
#include "sim/simulate.hpp"

namespace twinscale::sim::detail {

class CollectiveTasks {
public:
  CollectiveTasks(const NetworkPaths& paths, const SimOptions& options) : paths_(paths), options_(options) {}

  /// The plan of `kind` over the GPUs `gpus` (group order) with NCCL's protocol for
  /// `bytes`: channels from the members' NICs and SimOptions::channels, protocol by
  /// the tuner rule of nccl_model.hpp given this group's Simple bus bandwidth on an
  /// idle fabric.
  CollectivePlan plan(schedules::OpKind kind, double bytes, const std::vector<int64_t>& gpus) const;

  /// Closed-form seconds of the collective run at once by every group of `gpu_groups`
  /// (the first is the one whose plan is taken; the others are its symmetric images),
  /// started at `start_s` (it matters only with degradation windows: NetworkPaths::windows()).
  double closed_form_s(schedules::OpKind kind, double bytes, const std::vector<std::vector<int64_t>>& gpu_groups,
                       double start_s = 0) const;
  /// The same with its plan already made (plan(kind, bytes, gpu_groups.front())).
  double closed_form_s(const CollectivePlan& plan, schedules::OpKind kind,
                       const std::vector<std::vector<int64_t>>& gpu_groups, double start_s = 0) const;

  /// Flows of the collective for every group of `gpu_groups`: one merged flow per
  /// transfer carrying all its steps with the extra latencies as a delay (`merged`), or
  /// one flow per step chained by dependencies.
  CommTask flow_task(schedules::OpKind kind, double bytes, const std::vector<std::vector<int64_t>>& gpu_groups,
                     bool merged) const;

  /// The Simple protocol's bus bandwidth of `plan` over `gpus` on an idle fabric.
  double simple_busbw(const CollectivePlan& plan, schedules::OpKind kind, double bytes,
                      const std::vector<int64_t>& gpus) const;

private:
  const NetworkPaths& paths_;
  const SimOptions& options_;
  /// Tuner decisions by (kind and algorithm, bytes, GPUs): plans are cheap, the busbw
  /// estimate routes every transfer.
  /// Keyed by {kind·2 + tree, the bytes' bits, GPUs…}; looked up through key_ (no
  /// allocation when it hits).
  mutable std::unordered_map<std::vector<int64_t>, std::pair<ProtocolCost, double>, RouteKeyHash> tuned_;
  mutable std::vector<int64_t> key_;
};

} // namespace twinscale::sim::detail
