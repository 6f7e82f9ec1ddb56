// What a congestion controller costs a flow that shares its bottleneck, derived from the
// fluid model (fluid_model.hpp) and applied to the flow engine's max-min flows
// (flow_congestion.hpp). docs/congestion.md explains the choice.
//
// For n flows of S bytes that start together on one bottleneck of capacity C, max-min
// sharing (SimGrid) finishes them at n·S / C. The fluid model with the controller
// finishes them at T_cc(n, S) ≥ n·S / C: the time lost to the controller's transient
// (rates cut below the fair share after the collision, then recovering; DCQCN and Swift
// start at line rate). The penalty is the factor by which a flow's bytes are scaled so
// that max-min sharing takes T_cc: factor = T_cc · C / (n·S) ≥ 1.
//
// The loss L = T_cc − n·S/C is a fixed cost once the rates have converged, so for S above
// the largest size simulated (64 MB) the factor is 1 + L(n, 64 MB) · C / (n·S). Values are
// computed on first use per (n, size bucket) and kept: n is rounded up to one of 1, 2, 3,
// 4, 6, 8, 12, 16, 24, 32, 48, 64 (more flows: 64), S down to a power of two ≥ 4 KiB.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "topology/congestion_spec.hpp"

namespace twinscale::sim::congestion {

class CcPenaltyTable {
public:
  CcPenaltyTable(topology::NetworkCcSpec spec, double line_rate_bytes_per_s);

  /// Scale factor (≥ 1) for the bytes of a flow of `bytes` that shares its most loaded
  /// link with `flows` flows in all (itself included). 1 for one flow or "none".
  /// `credit_s` is taken off the loss first (≥ 0 left): the flow engine's dynamic model
  /// adds the standing queue's delay itself, which the fluid loss also contains.
  double byte_factor(int64_t flows, double bytes, double credit_s = 0);

  /// The number of flows the table is kept for: `flows` rounded up to a bucket.
  static int bucket(int64_t flows);

  /// The fluid loss L(n, S) in seconds (see above), computed without the cache.
  double loss_s(int n, double bytes) const;

private:
  topology::NetworkCcSpec spec_;
  double line_rate_;
  std::map<std::pair<int, int>, double> loss_; // (n, log2 bytes) → seconds
};

} // namespace twinscale::sim::congestion
