// Paths and closed forms on the fabric: the links a flow crosses (topology's ECMP
// route, with NCCL's PXN relay when enabled), their achieved bandwidth (raw ×
// efficiency), and the closed-form time of a collective plan given the load its own
// transfers put on each link.
//
// PXN (NCCL ≥ 2.12, on by default): a transfer between servers whose GPUs sit on
// different rails first crosses NVLink to the GPU of the source server on the
// destination's rail, then leaves through that GPU's NIC. Rings whose channels enter a
// server on one GPU and leave it from another thus stay on one rail per channel, as the
// rings NCCL builds on rail-optimised fabrics do.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "schedules/error.hpp"
#include "sim/collective_algorithms.hpp"
#include "topology/fabric.hpp"

namespace twinscale::sim::detail {

// The cache key of one phase of a closed form, shared by the route caches: key_phase
// clears `key` and writes the transfers (count, then source·destination and channel of
// each), key_group appends one group (size, then members).
void key_phase(const std::vector<PhaseTransfer>& transfers, std::vector<int64_t>& key);
void key_group(const std::vector<int64_t>& group, std::vector<int64_t>& key);

// Inserts `value` under `key` into a route cache bounded to `max_words` 8-byte words of
// keys and values (`words` counts them): a cache that would outgrow it is emptied first.
template <class Map, class Value>
const Value& insert_bounded(Map& cache, size_t& words, size_t max_words, const std::vector<int64_t>& key, Value&& value,
                            size_t value_words) {
  const size_t added = key.size() + value_words;
  if (words + added > max_words) {
    cache.clear();
    words = 0;
  }
  words += added;
  return cache.emplace(key, std::forward<Value>(value)).first->second;
}

class DegradationWindows;

/// One flow of a phase as the closed form sees it: its path latency and its rate.
struct RouteFlowCost {
  double latency;
  double rate;
};
struct RouteKeyHash {
  size_t operator()(const std::vector<int64_t>& k) const;
};

/// The routed flows of closed forms by (transfers, groups) (NetworkPaths::phase_flows),
/// and what they were routed under. A NetworkPaths keeps its own; one may also outlive
/// it and serve the next NetworkPaths on the same fabric with the same routing and link
/// bandwidths (sim::SharedRoutes: the points of a sweep), which then reuses the routes
/// instead of routing them again. A change of any of those empties it first.
struct RouteMemo {
  std::unordered_map<std::vector<int64_t>, std::vector<RouteFlowCost>, RouteKeyHash> flows;
  size_t words = 0; // keys' and values' 8-byte words, bounded
  // what the flows hold for (a shared memo): fabric, ECMP salt and policy, PXN, link bandwidths
  const topology::Fabric* fabric = nullptr;
  size_t links = 0;
  int64_t gpus = 0;
  uint64_t seed = 0;
  topology::EcmpPolicy policy{};
  bool pxn = false;
  std::vector<double> link_bw;
  void clear() {
    flows.clear();
    words = 0;
  }
};

class NetworkPaths {
public:
  NetworkPaths(const topology::Fabric& fabric, uint64_t seed, topology::EcmpPolicy policy, double nvlink_efficiency,
               double network_efficiency, bool pxn = true);
  /// A copy for another thread (closed_form_prefetch.hpp): the same fabric, routing, link
  /// bandwidths, degradations and windows (the link figures shared, read-only), with
  /// scratch and a route cache of its own (empty). `other`'s link figures may not change
  /// once a copy exists (degrade_link, set_nvlink_efficiency).
  struct OwnScratch {};
  NetworkPaths(const NetworkPaths& other, OwnScratch);
  NetworkPaths(const NetworkPaths&) = delete; // a plain copy would share the route cache
  NetworkPaths& operator=(const NetworkPaths&) = delete;

  const topology::Fabric& fabric() const { return fabric_; }
  /// Achieved bandwidth of link `link` (per direction), degraded when degrade_link() was called.
  double link_bw(uint32_t link) const { return tables_->link_bw[link]; }
  /// A link carrying `factor` (0, 1) of its bandwidth for the whole run (fault plan
  /// LinkDegraded). Closed forms apply it to the flows of the group they are asked
  /// about (the first of gpu_groups) and count its symmetric images' flows at the
  /// nominal bandwidth: an image crossing the link is slowed when it runs itself.
  void degrade_link(uint32_t link, double factor);
  /// Whether degrade_link() was called.
  bool degraded() const { return degraded_; }
  /// Whether a flow of `plan` run by the group on `gpus` crosses a degraded link, for the
  /// whole run or in a window (PXN relays included). When none does, the group's closed
  /// form over an image set equals that of any other image whose flows cross none, at
  /// any start: every flow keeps its nominal rate.
  bool crosses_degraded(const CollectivePlan& plan, const std::vector<int64_t>& gpus) const;
  /// Sets an NVLink link's achieved bandwidth to its raw bandwidth × `efficiency` (mixed
  /// GPU models: a group's NVLink generation has its own; call before degrade_link()).
  void set_nvlink_efficiency(uint32_t link, double efficiency) {
    TWINSCALE_ASSERT(tables_.use_count() == 1, "NetworkPaths: link figures changed after a copy was made");
    tables_->link_bw[link] = tables_->nominal_bw[link] = fabric_.links()[link].bw_bytes_per_s * efficiency;
  }
  /// Bandwidth of `link` before degrade_link().
  double nominal_link_bw(uint32_t link) const { return tables_->nominal_bw[link]; }
  /// Degradations in time windows (degradation_windows.hpp); null when there are none.
  /// Closed forms of ops that may cross a window's edge come from it, not from
  /// closed_form_s/p2p_s.
  const DegradationWindows* windows() const { return windows_.get(); }
  void set_windows(std::shared_ptr<const DegradationWindows> windows) {
    windows_ = std::move(windows);
    routes_ = &own_routes_; // shared routes only for runs without windows
  }
  /// Latency of crossing `link` in one direction: its cable latency plus the switch
  /// latency (SwitchSpec::latency_s, cut-through) when the far end is a switch.
  double hop_latency_s(uint32_t link, bool up) const { return (up ? tables_->lat_up : tables_->lat_down)[link]; }
  /// The links from `src_gpu` to `dst_gpu` for queue pair `channel` (replaces `out`).
  void route(int64_t src_gpu, int64_t dst_gpu, uint32_t channel, std::vector<topology::Hop>& out) const;
  /// The GPU whose NIC a transfer from `src_gpu` to `dst_gpu` leaves through (PXN
  /// relay), `src_gpu` itself when no relay applies.
  int64_t pxn_proxy(int64_t src_gpu, int64_t dst_gpu) const;
  double path_latency_s(int64_t src_gpu, int64_t dst_gpu, uint32_t channel) const;

  /// Closed-form seconds of `plan` run at once by every group in `gpu_groups` (members'
  /// GPUs, in group order), one flow per transfer (transfers carry their channel). Per
  /// phase: max over flows of max(nccl latency, latency_steps · path latency) + steps ·
  /// bytes / rate, rate = min over the path of achieved bandwidth / flows of this call on
  /// that link direction (degraded links: see degrade_link()). `with_latency` false: the
  /// bandwidth term alone. `reuse_routes`: keep the routed flows of each phase for the
  /// next call with the same transfers and groups (worth it where one group runs a
  /// collective with many different byte counts: MoE all-to-alls; elsewhere the caller's
  /// per-bytes cache already hits, and the key would only cost time and memory).
  /// Several groups and no degraded link: the routed flows are kept too, keyed by the
  /// groups as a set, so each symmetric image of a group (the same set in another
  /// order: a DP group's tp shifts) reuses them. Exact: without degradations a flow's
  /// rate and latency do not depend on which group is first, and the max over flows
  /// does not depend on their order.
  double closed_form_s(const CollectivePlan& plan, const std::vector<std::vector<int64_t>>& gpu_groups,
                       bool with_latency = true, bool reuse_routes = false) const;
  /// One point-to-point transfer on an otherwise idle fabric.
  double p2p_s(int64_t src_gpu, int64_t dst_gpu, double bytes, int channels) const;

  /// Keeps routed flows in `memo` instead of this object's own cache, so that they serve
  /// later simulations on the same fabric (memo is emptied first unless it was filled
  /// under this fabric, ECMP salt and policy, PXN and these link bandwidths). Call after
  /// every set_nvlink_efficiency(); ignored once a link is degraded or with windows
  /// (degrade_link() goes back to the own cache). With a shared memo single-group closed
  /// forms read cached flows too: exact, since a phase's time is a max over flows that
  /// grows with latency and falls with rate (both monotone under rounding), so the flows
  /// other flows dominate never decide it.
  void share_routes(RouteMemo& memo);

private:
  using FlowCost = RouteFlowCost;
  /// The flows of `transfers` run by every group of `gpu_groups`, routed and loaded,
  /// keeping only those no other flow dominates (one with at least its latency and at
  /// most its rate): the phase's time, a max over flows that grows with latency and
  /// falls with rate, is the same over them. Cached by (transfers, groups): routes and
  /// loads do not depend on bytes, so a collective re-run with other bytes (MoE
  /// all-to-alls) is not routed again.
  /// Without a degraded link the key takes the groups in a canonical order (the flows'
  /// rates and latencies then do not depend on which group is first).
  const std::vector<FlowCost>& phase_flows(const std::vector<PhaseTransfer>& transfers,
                                           const std::vector<std::vector<int64_t>>& gpu_groups) const;
  /// The flows in the order phase_flows scans them for its front (latency down, rate
  /// up), where only each latency's lowest rate matters: that one flow per latency when
  /// there are at most 64 latencies, else `flows` itself, sorted.
  const std::vector<FlowCost>& lowest_rate_by_latency(std::vector<FlowCost>& flows) const;
  /// The same flows, routed now (not cached), into `out`.
  void route_flows(const std::vector<PhaseTransfer>& transfers, const std::vector<std::vector<int64_t>>& gpu_groups,
                   std::vector<FlowCost>& out) const;

  const topology::Fabric& fabric_;
  const topology::ClosShape& shape_; // fabric_.shape(), held for the hot paths
  uint64_t seed_;
  topology::EcmpPolicy policy_;
  bool pxn_;
  /// The per-link and per-rail figures, shared with the copies made for other threads
  /// (OwnScratch), which only read them: changed only before any copy is made.
  struct LinkTables {
    std::vector<int64_t> proxy_local; // by rail: local index of a GPU on that rail
    std::vector<double> link_bw;
    std::vector<double> nominal_bw; // link_bw before degrade_link()
    std::vector<double> lat_up, lat_down;
  };
  std::shared_ptr<LinkTables> tables_;
  bool degraded_ = false; // degrade_link() was called: the first group's flows differ
  std::shared_ptr<const DegradationWindows> windows_;
  mutable std::vector<int32_t> load_; // per link direction (2·link + down)
  mutable std::vector<uint32_t> touched_;
  mutable std::vector<topology::Hop> hops_;
  mutable std::vector<topology::Hop> relay_hops_;
  mutable std::vector<int64_t> key_;            // phase_flows' key, reused
  mutable std::vector<uint32_t> group_order_;   // phase_flows' canonical order of the groups
  mutable std::vector<FlowCost> scratch_flows_; // route_flows' output when not cached
  struct FlowPath {                             // a routed flow: its hops in flow_hops_
    size_t hop_begin, hop_end;
    double latency;
    bool own; // a flow of the first group (degraded links apply)
  };
  mutable std::vector<topology::Hop> flow_hops_; // route_flows' scratch, reused
  mutable std::vector<FlowPath> flow_paths_;
  mutable std::vector<FlowCost> by_latency_; // lowest_rate_by_latency's list, reused
  mutable RouteMemo own_routes_;
  RouteMemo* routes_ = &own_routes_; // own_routes_ or a shared memo (share_routes)
};

} // namespace twinscale::sim::detail
