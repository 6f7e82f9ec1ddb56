#include "topology/ecmp_analysis.hpp"

#include <algorithm>

namespace twinscale::topology {

EcmpReport analyze_ecmp(const Fabric& f, const std::vector<Flow>& flows, EcmpPolicy policy, uint64_t seed) {
  const auto& links = f.links();
  // Dense per-direction accumulators: index 2·link + (up ? 0 : 1).
  std::vector<int64_t> count(2 * links.size(), 0);
  std::vector<double> bytes(2 * links.size(), 0), demand(2 * links.size(), 0);
  std::vector<Hop> path;
  std::vector<WeightedHop> fluid;
  EcmpReport rep;
  for (const Flow& fl : flows) {
    if (policy == EcmpPolicy::IdealSpread) {
      f.spread(fl.src_gpu, fl.dst_gpu, fluid);
    } else {
      f.route(fl.src_gpu, fl.dst_gpu, fl.flow_id, seed, policy, path);
      fluid.clear();
      for (const Hop& h : path) fluid.push_back(WeightedHop{h.link, h.up, 1});
    }
    if (fluid.empty()) continue;
    // Line rate: the slowest link every path crosses whole (fractions split over
    // parallel equal links never make a path slower than its whole-flow links).
    double line_rate = links[fluid.front().link].bw_bytes_per_s;
    for (const WeightedHop& h : fluid) line_rate = std::min(line_rate, links[h.link].bw_bytes_per_s);
    if (fluid.size() > 2) ++rep.network_flows;
    for (const WeightedHop& h : fluid)
      if (h.up && (links[h.link].kind == LinkKind::TorToAggregation || links[h.link].kind == LinkKind::TorToSpine)) {
        ++rep.flows_leaving_tor;
        break;
      }
    for (const WeightedHop& h : fluid) {
      const size_t i = 2 * static_cast<size_t>(h.link) + (h.up ? 0 : 1);
      ++count[i];
      bytes[i] += fl.bytes * h.fraction;
      demand[i] += line_rate * h.fraction;
    }
  }
  for (size_t i = 0; i < count.size(); ++i) {
    if (count[i] == 0) continue;
    const Link& l = links[i / 2];
    LinkLoad ll{static_cast<uint32_t>(i / 2), i % 2 == 0, count[i], bytes[i], demand[i], demand[i] / l.bw_bytes_per_s};
    rep.max_link_busy_s = std::max(rep.max_link_busy_s, bytes[i] / l.bw_bytes_per_s);
    const bool network = l.kind != LinkKind::NvLink && l.kind != LinkKind::Pcie;
    if (network) {
      rep.max_flows_on_link = std::max(rep.max_flows_on_link, count[i]);
      if (ll.collision_factor > rep.worst_collision_factor) {
        rep.worst_collision_factor = ll.collision_factor;
        rep.worst_link = ll.link;
        rep.worst_up = ll.up;
      }
    }
    rep.loads.push_back(ll);
  }
  return rep;
}

std::vector<Flow> dp_ring_flows(const JobShape& s, const std::vector<int64_t>& gpu_of_rank, double bytes) {
  std::vector<Flow> out;
  if (s.dp < 2) return out;
  out.reserve(gpu_of_rank.size());
  for (int64_t pp = 0; pp < s.pp; ++pp)
    for (int64_t dp = 0; dp < s.dp; ++dp)
      for (int64_t tp = 0; tp < s.tp; ++tp) {
        const int64_t r = tp + s.tp * (dp + s.dp * pp);
        const int64_t next = tp + s.tp * ((dp + 1) % s.dp + s.dp * pp);
        out.push_back(Flow{gpu_of_rank[static_cast<size_t>(r)], gpu_of_rank[static_cast<size_t>(next)], bytes,
                           static_cast<uint64_t>(r)});
      }
  return out;
}

std::vector<Flow> pp_neighbour_flows(const JobShape& s, const std::vector<int64_t>& gpu_of_rank, double bytes) {
  std::vector<Flow> out;
  for (int64_t pp = 0; pp + 1 < s.pp; ++pp)
    for (int64_t dp = 0; dp < s.dp; ++dp)
      for (int64_t tp = 0; tp < s.tp; ++tp) {
        const int64_t r = tp + s.tp * (dp + s.dp * pp);
        const int64_t next = r + s.tp * s.dp;
        out.push_back(Flow{gpu_of_rank[static_cast<size_t>(r)], gpu_of_rank[static_cast<size_t>(next)], bytes,
                           static_cast<uint64_t>(r)});
      }
  return out;
}

} // namespace twinscale::topology
