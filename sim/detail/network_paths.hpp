// Paths and closed forms on the fabric: the links a flow crosses (topology's ECMP
// route), their achieved bandwidth (raw × efficiency), and the closed-form time of a
// collective plan given the load its own transfers put on each link.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/collective_algorithms.hpp"
#include "topology/fabric.hpp"

namespace twinscale::sim::detail {

class NetworkPaths {
public:
  NetworkPaths(const topology::Fabric& fabric, uint64_t seed, topology::EcmpPolicy policy,
               double nvlink_efficiency, double network_efficiency);

  const topology::Fabric& fabric() const { return fabric_; }
  /// Achieved bandwidth of link `link` (per direction).
  double link_bw(uint32_t link) const { return link_bw_[link]; }
  /// Latency of crossing `link` in one direction: its cable latency plus the switch
  /// latency (SwitchSpec::latency_s, cut-through) when the far end is a switch.
  double hop_latency_s(uint32_t link, bool up) const { return (up ? lat_up_ : lat_down_)[link]; }
  void route(int64_t src_gpu, int64_t dst_gpu, uint32_t channel, std::vector<topology::Hop>& out) const;
  double path_latency_s(int64_t src_gpu, int64_t dst_gpu, uint32_t channel) const;

  /// Closed-form seconds of `plan` run at once by every group in `gpu_groups` (members'
  /// GPUs, in group order), each transfer split over `channels` flows. Per phase:
  /// max over flows of latency_steps · path latency + steps · bytes / rate, rate = min
  /// over the path of achieved bandwidth / flows of this call on that link direction.
  double closed_form_s(const CollectivePlan& plan, const std::vector<std::vector<int64_t>>& gpu_groups,
                       int channels) const;
  /// One point-to-point transfer on an otherwise idle fabric.
  double p2p_s(int64_t src_gpu, int64_t dst_gpu, double bytes, int channels) const;

private:
  const topology::Fabric& fabric_;
  uint64_t seed_;
  topology::EcmpPolicy policy_;
  std::vector<double> link_bw_;
  std::vector<double> lat_up_, lat_down_;
  mutable std::vector<int32_t> load_;       // per link direction (2·link + down)
  mutable std::vector<uint32_t> touched_;
  mutable std::vector<topology::Hop> hops_;
};

} // namespace twinscale::sim::detail
