// Routing: per-flow ECMP paths (route) and the fluid ideal spread (spread).
#include "topology/detail/fabric_impl.hpp"
#include "topology/detail/hash.hpp"

namespace twinscale::topology {

using detail::check_gpu;

void Fabric::route(int64_t src_gpu, int64_t dst_gpu, uint64_t flow_id, uint64_t seed, EcmpPolicy policy,
                   std::vector<Hop>& out) const {
  check_gpu(*this, src_gpu);
  check_gpu(*this, dst_gpu);
  out.clear();
  if (src_gpu == dst_gpu) return;
  const Impl& m = *impl_;
  const ClosShape& s = m.shape;
  const auto u32 = [](int64_t x) { return static_cast<uint32_t>(x); };
  const Impl::GpuEnd& end_s = m.gpu_end[static_cast<size_t>(src_gpu)];
  const Impl::GpuEnd& end_d = m.gpu_end[static_cast<size_t>(dst_gpu)];
  if (end_s.server == end_d.server) {
    out.push_back(Hop{u32(src_gpu), true});
    out.push_back(Hop{u32(dst_gpu), false});
    return;
  }
  if (const int64_t relay = s.rail_only ? rail_relay(src_gpu, dst_gpu) : src_gpu; relay != src_gpu) {
    // rail-only, another rail: NVLink to the relay on the destination's rail, then its path
    route(relay, dst_gpu, flow_id, seed, policy, out);
    out.insert(out.begin(), {Hop{u32(src_gpu), true}, Hop{u32(relay), false}});
    return;
  }
  const bool hash = policy == EcmpPolicy::Hash;
  const uint64_t flow =
      hash ? detail::flow_hash_prefix(static_cast<uint64_t>(src_gpu), static_cast<uint64_t>(dst_gpu), flow_id, seed)
           : 0;
  // Equal-cost choice among n next hops at switch vertex `sw`; `level` spreads the
  // round-robin of IdealSpread over successive tiers.
  const auto pick = [&](int64_t n, uint32_t sw, uint64_t rr) -> int64_t {
    if (n == 1) return 0;
    if (hash) return static_cast<int64_t>(detail::flow_hash_at(flow, sw) % static_cast<uint64_t>(n));
    return static_cast<int64_t>(rr % static_cast<uint64_t>(n));
  };
  const int64_t nic_s = end_s.nic, nic_d = end_d.nic;
  const int64_t tor_s = end_s.tor, tor_d = end_d.tor;
  // IdealSpread: round-robin over the ToR's uplinks by flow id, offset by the source
  // NIC's port position under its ToR so that equal flow ids from different NICs spread.
  const uint64_t rr0 = flow_id + end_s.port;
  out.push_back(Hop{m.l_pcie + u32(src_gpu), true});
  out.push_back(Hop{m.l_nic + u32(nic_s), true});
  if (tor_s != tor_d) {
    const uint32_t tor_sv = m.v_tor + u32(tor_s);
    if (s.tiers == 2) {
      const int64_t up = pick(s.tor_up_ports, tor_sv, rr0);
      const int64_t spine = up / s.links_per_spine;
      const int64_t plane = s.rail_only ? tor_s % s.rails : 0;
      const int64_t down = pick(s.links_per_spine, m.v_spine + u32(plane * s.spines_per_plane + spine),
                                rr0 / static_cast<uint64_t>(s.tor_up_ports));
      out.push_back(Hop{m.l_tor_up + u32(tor_s * s.tor_up_ports + up), true});
      out.push_back(Hop{m.l_tor_up + u32(tor_d * s.tor_up_ports + spine * s.links_per_spine + down), false});
    } else {
      const Impl::TorPlace place_s = m.tor_place[static_cast<size_t>(tor_s)];
      const Impl::TorPlace place_d = m.tor_place[static_cast<size_t>(tor_d)];
      const int64_t pod_s = place_s.pod, pod_d = place_d.pod;
      const int64_t up_tor = pick(s.tor_up_ports, tor_sv, rr0);
      const int64_t a = up_tor / s.links_per_agg;
      out.push_back(Hop{m.l_tor_up + u32(tor_s * s.tor_up_ports + up_tor), true});
      if (pod_s != pod_d) {
        const int64_t agg_s = pod_s * s.aggs_per_pod + a, agg_d = pod_d * s.aggs_per_pod + a;
        const uint64_t rr = rr0 / static_cast<uint64_t>(s.tor_up_ports) + place_s.pos;
        const int64_t up = pick(s.agg_up_ports, m.v_agg + u32(agg_s), rr);
        const int64_t spine = up / s.links_per_spine;
        const int64_t down =
            pick(s.links_per_spine, m.v_spine + u32(m.spine_plane_of_agg(agg_s) * s.spines_per_plane + spine),
                 rr / static_cast<uint64_t>(s.agg_up_ports) + static_cast<uint64_t>(pod_s));
        out.push_back(Hop{m.l_agg_up + u32(agg_s * s.agg_up_ports + up), true});
        out.push_back(Hop{m.l_agg_up + u32(agg_d * s.agg_up_ports + spine * s.links_per_spine + down), false});
      }
      const int64_t agg_d = pod_d * s.aggs_per_pod + a;
      const int64_t down =
          pick(s.links_per_agg, m.v_agg + u32(agg_d), rr0 / static_cast<uint64_t>(s.tor_up_ports) + place_d.pos);
      out.push_back(Hop{m.l_tor_up + u32(tor_d * s.tor_up_ports + a * s.links_per_agg + down), false});
    }
  }
  out.push_back(Hop{m.l_nic + u32(nic_d), false});
  out.push_back(Hop{m.l_pcie + u32(dst_gpu), false});
}

void Fabric::spread(int64_t src_gpu, int64_t dst_gpu, std::vector<WeightedHop>& out) const {
  check_gpu(*this, src_gpu);
  check_gpu(*this, dst_gpu);
  out.clear();
  if (src_gpu == dst_gpu) return;
  const Impl& m = *impl_;
  const ClosShape& s = m.shape;
  const auto u32 = [](int64_t x) { return static_cast<uint32_t>(x); };
  const Impl::GpuEnd& end_s = m.gpu_end[static_cast<size_t>(src_gpu)];
  const Impl::GpuEnd& end_d = m.gpu_end[static_cast<size_t>(dst_gpu)];
  if (end_s.server == end_d.server) {
    out.push_back(WeightedHop{u32(src_gpu), true, 1});
    out.push_back(WeightedHop{u32(dst_gpu), false, 1});
    return;
  }
  if (const int64_t relay = m.shape.rail_only ? rail_relay(src_gpu, dst_gpu) : src_gpu; relay != src_gpu) {
    spread(relay, dst_gpu, out);
    out.insert(out.begin(), {WeightedHop{u32(src_gpu), true, 1}, WeightedHop{u32(relay), false, 1}});
    return;
  }
  const int64_t nic_s = end_s.nic, nic_d = end_d.nic;
  const int64_t tor_s = end_s.tor, tor_d = end_d.tor;
  out.push_back(WeightedHop{m.l_pcie + u32(src_gpu), true, 1});
  out.push_back(WeightedHop{m.l_nic + u32(nic_s), true, 1});
  if (tor_s != tor_d) {
    if (s.tiers == 2) {
      // Each uplink carries 1/U; spine j gets m/U and splits it over its m links to tor_d.
      const double f = 1.0 / static_cast<double>(s.tor_up_ports);
      for (int64_t i = 0; i < s.tor_up_ports; ++i)
        out.push_back(WeightedHop{m.l_tor_up + u32(tor_s * s.tor_up_ports + i), true, f});
      for (int64_t i = 0; i < s.tor_up_ports; ++i)
        out.push_back(WeightedHop{m.l_tor_up + u32(tor_d * s.tor_up_ports + i), false, f});
    } else {
      const int64_t pod_s = m.tor_place[static_cast<size_t>(tor_s)].pod,
                    pod_d = m.tor_place[static_cast<size_t>(tor_d)].pod;
      // Each ToR uplink carries 1/up (agg a gets 1/A, over links_per_agg links).
      const double fu = 1.0 / static_cast<double>(s.tor_up_ports);
      const double fa = 1.0 / static_cast<double>(s.aggs_per_pod);
      for (int64_t i = 0; i < s.tor_up_ports; ++i)
        out.push_back(WeightedHop{m.l_tor_up + u32(tor_s * s.tor_up_ports + i), true, fu});
      if (pod_s != pod_d) {
        const double fs = fa / static_cast<double>(s.agg_up_ports);
        for (int64_t a = 0; a < s.aggs_per_pod; ++a)
          for (int64_t i = 0; i < s.agg_up_ports; ++i)
            out.push_back(WeightedHop{m.l_agg_up + u32((pod_s * s.aggs_per_pod + a) * s.agg_up_ports + i), true, fs});
        for (int64_t a = 0; a < s.aggs_per_pod; ++a)
          for (int64_t i = 0; i < s.agg_up_ports; ++i)
            out.push_back(WeightedHop{m.l_agg_up + u32((pod_d * s.aggs_per_pod + a) * s.agg_up_ports + i), false, fs});
      }
      for (int64_t i = 0; i < s.tor_up_ports; ++i)
        out.push_back(WeightedHop{m.l_tor_up + u32(tor_d * s.tor_up_ports + i), false, fu});
    }
  }
  out.push_back(WeightedHop{m.l_nic + u32(nic_d), false, 1});
  out.push_back(WeightedHop{m.l_pcie + u32(dst_gpu), false, 1});
}

} // namespace twinscale::topology
