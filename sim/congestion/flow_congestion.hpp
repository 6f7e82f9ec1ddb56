// The flow engine's congestion-control hook (docs/congestion.md, "In the flow engine").
// It follows the flows in flight on every network link direction (NIC–ToR and above;
// NVLink and PCIe carry no RoCE congestion control) and, whenever a flow joins or
// leaves, recomputes the steady state of the ports it crosses (port_equilibrium.hpp):
//
//  - rates: the controller's fixed point gives each of n flows C/n, which SimGrid's
//    max-min sharing already does;
//  - queueing: a switch port fed from two ingresses or more holds the controller's
//    standing queue q(n); a flow that ends is held q(n)/C longer per such port on its
//    path (its last byte waits behind the queue), n counted when it ends;
//  - PFC: when one ingress U's share of that queue, q(n) · n_U→E / n, passes XOFF, U is
//    paused part of the time: every flow on U, victims that do not go to E included,
//    moves at the congested flows' pace C_E / n (FIFO behind the paused queue), so U's
//    capacity is set to min(C_U, n_U · C_E / n_E) until the condition clears (one level:
//    the pause is not propagated further upstream);
//  - the controller's transient after a collision stays a per-flow byte penalty taken
//    when a flow starts (cc_penalty.hpp), less the standing queue counted above.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "sim/congestion/cc_penalty.hpp"
#include "sim/congestion/port_equilibrium.hpp"
#include "sim/detail/network_paths.hpp"
#include "topology/congestion_spec.hpp"

namespace twinscale::sim::congestion {

class FlowCongestion {
public:
  /// Sets the capacity (bytes/s) of link direction `dir` (2·link + (down ? 1 : 0)).
  using SetCapacity = std::function<void(uint32_t dir, double bytes_per_s)>;

  FlowCongestion(const detail::NetworkPaths& paths, const topology::NetworkCcSpec& spec, SetCapacity set = {});

  /// A flow starts: joins its ports (their flow counts, ingresses and PFC pauses).
  void join(int64_t src_gpu, int64_t dst_gpu, uint32_t channel);
  /// The bytes a flow that has joined sends instead of `bytes` (≥ bytes): the transient
  /// of the most flows now on one of its ports (itself included). The flow engine asks
  /// once every flow starting at the same instant has joined, so that n flows that start
  /// together on a port each take the penalty of n, whatever order they joined in
  /// (cc_penalty.hpp: "n flows of S bytes that start together").
  double start_bytes(int64_t src_gpu, int64_t dst_gpu, uint32_t channel, double bytes);
  /// join then start_bytes: a flow that starts alone at its instant.
  double on_start(int64_t src_gpu, int64_t dst_gpu, uint32_t channel, double bytes) {
    join(src_gpu, dst_gpu, channel);
    return start_bytes(src_gpu, dst_gpu, channel, bytes);
  }
  /// The flow that on_start was called for has delivered its bytes (leaves its ports):
  /// returns the queueing delay (s) its last byte still has to wait.
  double on_end(int64_t src_gpu, int64_t dst_gpu, uint32_t channel);

  /// Whether PFC can pause a port with this controller (else no capacity ever changes).
  bool may_pause() const { return equilibrium_.pfc_possible(); }
  void set_capacity_setter(SetCapacity set) { set_ = std::move(set); }

  /// Capacity now applied to link direction `dir` (its nominal one unless paused).
  double capacity(uint32_t dir) const { return cap_[dir]; }

  struct Stats {
    int64_t flows_penalised = 0;
    double extra_bytes = 0;
    int64_t flows_queued = 0;   // flows that ended behind a standing queue
    double queue_delay_s = 0;   // their queueing delay, summed
    int64_t pause_changes = 0;  // capacity changes made for PFC
    int64_t most_paused = 0;    // most link directions paused at once
    int64_t started_paused = 0; // flows that started with a paused port on their path
  };
  const Stats& stats() const { return stats_; }
  int64_t flows_penalised() const { return stats_.flows_penalised; }
  double extra_bytes() const { return stats_.extra_bytes; }

private:
  struct Ingress {
    uint32_t dir = 0;
    int32_t flows = 0;
  };
  void network_hops(int64_t src_gpu, int64_t dst_gpu, uint32_t channel);
  double queue_s(uint32_t dir);
  void add_ingress(uint32_t egress, uint32_t ingress, int32_t delta);
  void refresh_pauses(uint32_t egress);
  void set_paused(uint32_t ingress, uint32_t egress, bool paused);
  void update_capacity(uint32_t dir);

  const detail::NetworkPaths& paths_;
  CcPenaltyTable table_;
  PortEquilibrium equilibrium_;
  SetCapacity set_;
  double line_rate_ = 1;
  std::vector<int32_t> active_;                // per link direction: flows in flight
  std::vector<double> nominal_, cap_;          // per link direction: bytes/s
  std::vector<std::vector<Ingress>> ingress_;  // per egress direction: where its flows come from
  std::vector<std::vector<uint32_t>> pausers_; // per direction: egresses whose PFC pauses it
  std::vector<uint8_t> network_;               // per link: carries congestion control
  std::vector<topology::Hop> hops_;
  std::vector<uint32_t> dirs_; // the network hops of the last route, as directions
  int64_t paused_now_ = 0;
  Stats stats_;
};

} // namespace twinscale::sim::congestion
