// The fabric's congestion control and flow control, as a cluster file describes them
// ([network] table; keys, units and defaults in config/cluster_keys.cpp and docs/keys.md,
// sources in docs/congestion.md). Plain structs: the models live in sim/congestion/.
#pragma once

#include <cstdint>

#include "common/enum_names.hpp"

namespace twinscale::topology {

enum class CongestionControl { None, Dcqcn, Swift, Hybrid };

/// The names of [network] congestion_control (hybrid: MegaScale's RTT + ECN).
inline constexpr EnumNames<CongestionControl, 4> kCongestionControlNames{{{"none", CongestionControl::None},
                                                                          {"dcqcn", CongestionControl::Dcqcn},
                                                                          {"swift", CongestionControl::Swift},
                                                                          {"hybrid", CongestionControl::Hybrid}}};

/// DCQCN (Zhu et al., SIGCOMM'15) in the fluid form of Zhu et al., CoNEXT'16 ("ECN or
/// Delay", Table 1 defaults). Rates in bytes/s here; the model converts to packets.
struct DcqcnSpec {
  double kmin_bytes = 5e3;           // RED: no marking below
  double kmax_bytes = 200e3;         // RED: marking probability pmax at kmax, 1 above
  double pmax = 0.01;                // RED: marking probability at kmax
  double g = 1.0 / 256;              // α EWMA gain
  double tau_s = 50e-6;              // CNP / rate-decrease interval τ
  double tau_alpha_s = 55e-6;        // α update interval τ'
  double timer_s = 55e-6;            // rate-increase timer T
  double byte_counter_bytes = 10e6;  // rate-increase byte counter B
  double rai_bytes_per_s = 40e6 / 8; // additive increase R_AI (40 Mb/s)
  /// Hyper increase (SIGCOMM'15 §3, from QCN): once both the timer and the byte counter
  /// have expired more than F times since the last rate cut, each increase event adds
  /// i · R_HAI to R_T (i = expirations past F). R_HAI = 10 R_AI as in QCN (802.1Qau's
  /// 5 / 50 Mb/s); 0 turns the stage off.
  int64_t fast_recovery_steps = 5;     // F
  double rhai_bytes_per_s = 400e6 / 8; // R_HAI (400 Mb/s)
  double min_rate_bytes_per_s = 1e6 / 8;
};

/// Swift (Kumar et al., SIGCOMM'20): AIMD on a delay target with hop and flow scaling.
struct SwiftSpec {
  double base_target_s = 25e-6;  // target delay before scaling
  double hop_scale_s = 1e-6;     // added per switch hop
  double ai_packets = 1.0;       // additive increase per RTT
  double beta = 0.8;             // multiplicative decrease gain
  double max_mdf = 0.5;          // largest decrease per RTT
  double fs_range_s = 5 * 25e-6; // flow-scaling range (5 × base target)
  double fs_min_cwnd_packets = 0.1;
  double fs_max_cwnd_packets = 100;
  double initial_cwnd_packets = 0; // 0: one bandwidth-delay product (line rate)
};

/// MegaScale's hybrid (M12): Swift's RTT AIMD plus DCQCN's ECN response on the window
/// (DcqcnSpec's RED marking, α and τ; docs/congestion.md).
struct HybridSpec {
  double ecn_weight = 1.0; // scales the ECN cut α/2 per CNP interval
};

/// Priority flow control (IEEE 802.1Qbb): per ingress port of a switch.
struct PfcSpec {
  bool enabled = true;
  double xoff_bytes = 512e3; // pause the upstream sender when the ingress queue exceeds
  double xon_bytes = 256e3;  // resume below
};

struct NetworkCcSpec {
  CongestionControl congestion_control = CongestionControl::None;
  double mtu_bytes = 1000;
  double feedback_delay_s = 4e-6; // signal to sender: one RTT of the fabric
  double buffer_bytes = 16e6;     // per switch port when PFC is off (drop above)
  DcqcnSpec dcqcn;
  SwiftSpec swift;
  HybridSpec hybrid;
  PfcSpec pfc;
};

inline const char* congestion_control_name(CongestionControl cc) {
  return enum_name(kCongestionControlNames, cc).data(); // the table's names are literals
}

} // namespace twinscale::topology
