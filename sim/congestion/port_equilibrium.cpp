#include "sim/congestion/port_equilibrium.hpp"

#include <algorithm>
#include <utility>

#include "sim/congestion/cc_penalty.hpp"
#include "sim/congestion/dcqcn_equations.hpp"
#include "sim/congestion/fluid_model.hpp"
#include "sim/congestion/fluid_scenarios.hpp"

namespace twinscale::sim::congestion {

using topology::CongestionControl;

PortEquilibrium::PortEquilibrium(topology::NetworkCcSpec spec) : spec_(std::move(spec)) {
  const bool dcqcn_bounded =
      spec_.congestion_control == CongestionControl::Dcqcn && spec_.dcqcn.kmax_bytes <= spec_.pfc.xoff_bytes;
  pfc_possible_ = spec_.pfc.enabled && spec_.congestion_control != CongestionControl::None && !dcqcn_bounded;
}

double PortEquilibrium::queue_bytes(int64_t flows, double capacity_bytes_per_s) {
  if (flows < 2 || spec_.congestion_control == CongestionControl::None || !(capacity_bytes_per_s > 0)) return 0;
  // The hybrid's queue comes from a fluid run: one per bucket of flows.
  const int64_t n = spec_.congestion_control == CongestionControl::Hybrid ? CcPenaltyTable::bucket(flows) : flows;
  const auto key = std::make_pair(n, capacity_bytes_per_s);
  auto it = cache_.find(key);
  if (it == cache_.end()) it = cache_.emplace(key, compute(n, capacity_bytes_per_s)).first;
  return it->second;
}

double PortEquilibrium::compute(int64_t flows, double capacity) const {
  const int n = static_cast<int>(std::min<int64_t>(flows, 1 << 20));
  switch (spec_.congestion_control) {
  case CongestionControl::Dcqcn: return dcqcn_fixed_point(spec_.dcqcn, spec_.mtu_bytes, capacity, n).queue_bytes;
  case CongestionControl::Swift: {
    const double rtt = swift_equilibrium_rtt_s(spec_.swift, spec_.mtu_bytes, capacity, n, 1);
    return std::max(0.0, rtt - FluidOptions{}.base_rtt_s) * capacity;
  }
  case CongestionControl::Hybrid: {
    const FluidFabric fab = incast_fabric(n, capacity);
    FluidOptions o;
    o.end_s = 0.06;
    o.sample_every_s = 100e-6;
    const FluidResult r = FluidModel(spec_, fab.ports, fab.flows, o).run();
    double sum = 0;
    int count = 0;
    for (const FluidSample& s : r.samples)
      if (s.t_s > 0.04) {
        sum += s.queue[static_cast<size_t>(n)];
        ++count;
      }
    return count > 0 ? sum / count : 0;
  }
  case CongestionControl::None: break;
  }
  return 0;
}

} // namespace twinscale::sim::congestion
