#include "sim/congestion/fluid_scenarios.hpp"

#include <cstddef>

namespace twinscale::sim::congestion {

FluidFabric incast_fabric(int32_t senders, double line_rate_bytes_per_s, const std::vector<double>& start_s,
                          double bytes) {
  FluidFabric fab;
  for (int32_t s = 0; s < senders; ++s) fab.ports.push_back({line_rate_bytes_per_s, true, false, {}});
  fab.ports.push_back({line_rate_bytes_per_s, false, true, {}});
  for (int32_t s = 0; s < senders; ++s) {
    FluidFlow f;
    f.path = {static_cast<uint32_t>(s), static_cast<uint32_t>(senders)};
    f.start_s = start_s.empty() ? 0 : start_s[static_cast<size_t>(s) % start_s.size()];
    f.bytes = bytes;
    f.hops = 1;
    fab.flows.push_back(f);
  }
  return fab;
}

FluidFabric victim_fabric(int32_t direct_senders, double line_rate_bytes_per_s) {
  FluidFabric fab;
  const double c = line_rate_bytes_per_s;
  fab.ports.push_back({c, true, true, {}});  // U: S1 → S2, S2 may pause it
  fab.ports.push_back({c, false, true, {}}); // B: S2 → R (receiver drains)
  fab.ports.push_back({c, false, true, {}}); // S2 → V
  auto nic = [&]() {
    fab.ports.push_back({c, true, false, {}}); // host → switch
    return static_cast<uint32_t>(fab.ports.size() - 1);
  };
  fab.flows.push_back({{nic(), VictimLayout::kUplink, VictimLayout::kBottleneck}, 0, 0, 2});
  for (int32_t s = 0; s < direct_senders; ++s) fab.flows.push_back({{nic(), VictimLayout::kBottleneck}, 0, 0, 1});
  fab.flows.push_back({{nic(), VictimLayout::kUplink, VictimLayout::kVictimEgress}, 0, 0, 2});
  return fab;
}

} // namespace twinscale::sim::congestion
