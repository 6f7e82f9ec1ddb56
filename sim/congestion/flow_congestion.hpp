// The flow engine's congestion-control hook: counts the flows in flight on every network
// link direction (NIC–ToR and above; NVLink and PCIe carry no RoCE congestion control)
// and, when a flow starts, scales its bytes by the penalty of its controller for the
// number of flows on its most loaded link (cc_penalty.hpp). The count is taken when the
// flow starts (flows that join later do not rescale it): docs/congestion.md.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/congestion/cc_penalty.hpp"
#include "sim/detail/network_paths.hpp"
#include "topology/congestion_spec.hpp"

namespace twinscale::sim::congestion {

class FlowCongestion {
public:
  FlowCongestion(const detail::NetworkPaths& paths, const topology::NetworkCcSpec& spec);

  /// A flow starts: returns the bytes to send instead of `bytes` (≥ bytes).
  double on_start(int64_t src_gpu, int64_t dst_gpu, uint32_t channel, double bytes);
  /// The flow that on_start was called for has ended.
  void on_end(int64_t src_gpu, int64_t dst_gpu, uint32_t channel);

  int64_t flows_penalised() const { return penalised_; }
  double extra_bytes() const { return extra_bytes_; }

private:
  const detail::NetworkPaths& paths_;
  CcPenaltyTable table_;
  std::vector<int32_t> active_;  // per link direction: 2·link + (down ? 1 : 0)
  std::vector<uint8_t> network_; // per link: carries congestion control
  std::vector<topology::Hop> hops_;
  int64_t penalised_ = 0;
  double extra_bytes_ = 0;
};

} // namespace twinscale::sim::congestion
