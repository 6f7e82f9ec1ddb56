// Small fabrics for the fluid model's validation cases and experiments/congestion: the
// N:1 incast and the PFC victim (head-of-line blocking) layouts of docs/congestion.md.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/congestion/fluid_model.hpp"

namespace twinscale::sim::congestion {

struct FluidFabric {
  std::vector<FluidPort> ports;
  std::vector<FluidFlow> flows;
};

/// N:1 incast: `senders` hosts, each with its own NIC port into one switch, whose egress
/// port to the receiver (port `senders`) is the bottleneck. Flow s starts at
/// start_s[s mod size] (0 when empty) and carries `bytes` (0: long-lived).
FluidFabric incast_fabric(int32_t senders, double line_rate_bytes_per_s, const std::vector<double>& start_s = {},
                          double bytes = 0);

/// PFC victim: switches S1 and S2 joined by one uplink U (S1 → S2). Incast: one sender on
/// S1 crossing U, and `direct_senders` hosts on S2, all to receiver R behind S2's egress
/// port B. The victim: a host on S1 whose flow crosses U to an idle receiver V.
/// Flow 0 is the incast flow through U, flows 1..direct_senders the direct ones, the
/// last flow the victim. Ports: `kUplink`, `kBottleneck`, `kVictimEgress` below.
struct VictimLayout {
  static constexpr uint32_t kUplink = 0;
  static constexpr uint32_t kBottleneck = 1;
  static constexpr uint32_t kVictimEgress = 2;
};
FluidFabric victim_fabric(int32_t direct_senders, double line_rate_bytes_per_s);

} // namespace twinscale::sim::congestion
