// The steady state of one congested switch port under the cluster's controller: the
// standing queue that n flows sharing it hold at equilibrium (each at C/n, which is
// what max-min sharing already gives them). The flow engine's dynamic model
// (flow_congestion.hpp) turns it into queueing delay and, when one ingress's share of it
// passes PFC's XOFF, into a pause of that ingress (docs/congestion.md).
//
//  - DCQCN: the CoNEXT'16 fixed point's queue q*(n) (dcqcn_equations.hpp);
//  - Swift: (RTT at the delay target of the window C·rtt/n − base RTT) · C;
//  - hybrid: no closed form (MegaScale gives no equations): the mean queue of the fluid
//    model's long-lived n:1 incast over 40–60 ms, n rounded up to 1, 2, 3, 4, 6, 8, 12,
//    16, 24, 32, 48, 64 (more: 64);
//  - none: 0 (the flow engine keeps ideal max-min sharing).
// Values are computed on first use per (n, capacity) and kept.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "topology/congestion_spec.hpp"

namespace twinscale::sim::congestion {

class PortEquilibrium {
public:
  explicit PortEquilibrium(topology::NetworkCcSpec spec);

  /// Standing queue (bytes) of `flows` flows (≥ 2) bottlenecked on a port of
  /// `capacity_bytes_per_s`; 0 for fewer flows or "none".
  double queue_bytes(int64_t flows, double capacity_bytes_per_s);
  /// False when no equilibrium queue of this controller can pass PFC's XOFF at one
  /// ingress (PFC off, or DCQCN whose queue stays ≤ Kmax ≤ XOFF).
  bool pfc_possible() const { return pfc_possible_; }

  const topology::NetworkCcSpec& spec() const { return spec_; }

private:
  double compute(int64_t flows, double capacity) const;

  topology::NetworkCcSpec spec_;
  bool pfc_possible_ = false;
  std::map<std::pair<int64_t, double>, double> cache_;
};

} // namespace twinscale::sim::congestion
