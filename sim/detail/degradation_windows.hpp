// Link degradations in time windows (fault plan LinkDegraded with at_s > 0 or a finite
// until_s): a link carries `factor` of its bandwidth during [at_s, until_s).
//
// Closed forms (analytic mode; closed-form collectives of the flow mode) use the
// bandwidth in effect at each instant. Time is cut into epochs at every window edge; in
// an epoch each link's bandwidth is constant. A phase of a collective is, per flow, its
// latency and then its bytes (steps × bytes per step) at the flow's rate (min over its
// path of bandwidth / flows of this call on that link direction, as
// NetworkPaths::closed_form_s); when an epoch edge falls inside a flow's transfer, the
// bytes moved before the edge went at the old rate and the rest go at the new one. The
// phase ends with its slowest flow; the next phase starts then. With no edge inside an
// op this is NetworkPaths::closed_form_s exactly.
//
// As in NetworkPaths, windows slow the flows of the group asked about (the first of
// gpu_groups); its symmetric images' flows count at the nominal bandwidth (an image is
// slowed when it runs itself). The flow mode applies windows in SimGrid (flow_engine.cpp).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/collective_algorithms.hpp"

namespace twinscale::sim::detail {

class NetworkPaths;

struct DegradationWindow {
  uint32_t link = 0;
  double factor = 1;  // bandwidth left, (0, 1)
  double at_s = 0;    // start
  double until_s = 0; // end (exclusive), may be ∞
};

class DegradationWindows {
public:
  /// `windows` must not overlap on one link (validate_plan refuses that).
  DegradationWindows(const NetworkPaths& paths, std::vector<DegradationWindow> windows);

  const std::vector<DegradationWindow>& list() const { return windows_; }
  /// Bandwidth factor of `link` at time `t` (1 outside its windows).
  double factor(uint32_t link, double t) const;
  /// Whether `link` has a window.
  bool windowed(uint32_t link) const { return link < link_slot_.size() && link_slot_[link] >= 0; }
  /// Seconds `plan` takes when started at `start_s` by every group of `gpu_groups`.
  double closed_form_s(const CollectivePlan& plan, const std::vector<std::vector<int64_t>>& gpu_groups, double start_s,
                       bool with_latency = true) const;
  /// One point-to-point transfer on an otherwise idle fabric, started at `start_s`.
  double p2p_s(int64_t src_gpu, int64_t dst_gpu, double bytes, int channels, double start_s) const;
  /// Everything closed_form_s(plan, gpu_groups, ·) reads besides the plan and the start:
  /// per phase, its distinct flows' latencies and rates in every epoch. Two calls whose
  /// plans and flow sets are equal give the same seconds for the same start.
  std::vector<double> flow_set(const CollectivePlan& plan, const std::vector<std::vector<int64_t>>& gpu_groups) const;

private:
  /// A phase's flows: latency and rate in each epoch (rate[flow · epochs + epoch]).
  struct Flows {
    std::vector<double> latency;
    std::vector<double> rate;
  };
  struct KeyHash {
    size_t operator()(const std::vector<int64_t>& k) const;
  };
  size_t epoch_of(double t) const;
  const Flows& phase_flows(const std::vector<PhaseTransfer>& transfers,
                           const std::vector<std::vector<int64_t>>& gpu_groups) const;
  Flows route_flows(const std::vector<PhaseTransfer>& transfers,
                    const std::vector<std::vector<int64_t>>& gpu_groups) const;
  /// Seconds after `t` at which `work` bytes have moved at the epochs' rates of `rate`
  /// (one per epoch).
  double transfer_s(const double* rate, double t, double work) const;

  const NetworkPaths& paths_;
  std::vector<DegradationWindow> windows_;
  std::vector<double> epoch_start_;          // epoch k is [epoch_start_[k], epoch_start_[k+1])
  std::vector<std::vector<double>> factors_; // by link with windows: factor in each epoch
  std::vector<int32_t> link_slot_;           // link → index into factors_, -1: no window
  mutable std::unordered_map<std::vector<int64_t>, Flows, KeyHash> cache_;
  mutable size_t cache_words_ = 0;
  mutable std::vector<int64_t> key_;
  mutable std::vector<int32_t> load_; // per link direction (2·link + down), while routing
  mutable std::vector<uint32_t> touched_;
};

} // namespace twinscale::sim::detail
