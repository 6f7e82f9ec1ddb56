// ECMP analysis: route a set of flows and report the load on every link direction and
// the worst collision factor (M11).
//
// A link direction's collision factor is the sum of the line rates of the flows that
// cross it divided by its bandwidth, a flow's line rate being the slowest link of its
// path (what it would get alone). 1 means the flows fill the link exactly if each ran at
// line rate; 2 means two flows that could each fill it were hashed onto it.
#pragma once

#include <cstdint>
#include <vector>

#include "topology/fabric.hpp"
#include "topology/placement.hpp"

namespace twinscale::topology {

struct Flow {
  int64_t src_gpu = 0;
  int64_t dst_gpu = 0;
  double bytes = 0;
  uint64_t flow_id = 0;
};

struct LinkLoad {
  uint32_t link = 0;
  bool up = true;
  int64_t flows = 0;
  double bytes = 0;
  double demand_bytes_per_s = 0; // sum of the flows' line rates
  double collision_factor = 0;   // demand ÷ link bandwidth
};

struct EcmpReport {
  std::vector<LinkLoad> loads;       // every loaded link direction, by (link, up first)
  double worst_collision_factor = 0; // over network links (NIC–ToR and above)
  uint32_t worst_link = 0;
  bool worst_up = true;
  int64_t max_flows_on_link = 0; // over network links
  double max_link_busy_s = 0;    // max over all link directions of bytes ÷ bw
  int64_t network_flows = 0;     // flows that leave their server
  int64_t flows_leaving_tor = 0; // flows exposed to ECMP: they leave their ToR
};

/// Routes every flow with `policy` and `seed`. With IdealSpread every flow is split evenly
/// over all its equal-cost paths (Fabric::spread): the fluid bound that hashing is
/// compared against (flow counts then count every flow that touches a link).
EcmpReport analyze_ecmp(const Fabric& fabric, const std::vector<Flow>& flows, EcmpPolicy policy, uint64_t seed);

/// The traffic of one ring step of every data-parallel group of a placed job: rank r
/// sends `bytes` to the next rank of its DP ring (flow id = rank).
std::vector<Flow> dp_ring_flows(const JobShape& shape, const std::vector<int64_t>& gpu_of_rank, double bytes);

/// Pipeline traffic: every rank of stage p sends `bytes` to the same rank of stage p+1.
std::vector<Flow> pp_neighbour_flows(const JobShape& shape, const std::vector<int64_t>& gpu_of_rank, double bytes);

} // namespace twinscale::topology
