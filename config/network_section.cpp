// [network] in a cluster file. Every key, its unit and default (sources: docs/congestion.md):
//
//   [network]
//   congestion_control = "none"  # none | dcqcn | swift | hybrid (MegaScale's RTT + ECN, M12)
//   mtu_bytes = 1000             # packet size the controllers count in
//   feedback_delay_us = 4        # signal → sender (one fabric RTT)
//   buffer_bytes = 16e6          # per switch port, used when PFC is off (drop above)
//
//   [network.dcqcn]              # Zhu et al. SIGCOMM'15; fluid form CoNEXT'16, Table 1
//   kmin_bytes = 5e3             # RED: no ECN mark below
//   kmax_bytes = 200e3           # RED: pmax at kmax, every packet above
//   pmax = 0.01
//   g = 0.00390625               # α gain (1/256)
//   tau_us = 50                  # CNP interval (rate decrease at most once per τ)
//   tau_alpha_us = 55            # α update timer
//   timer_us = 55                # rate-increase timer T
//   byte_counter_bytes = 10e6    # rate-increase byte counter B
//   rai_mbit_per_s = 40          # additive increase
//   fast_recovery_steps = 5      # F: counter expirations before hyper increase
//   rhai_mbit_per_s = 400        # hyper increase step (10 × R_AI as QCN; 0: off)
//   min_rate_mbit_per_s = 1
//
//   [network.swift]              # Kumar et al. SIGCOMM'20
//   base_target_us = 25          # delay target before hop and flow scaling
//   hop_scale_us = 1             # added per switch hop
//   ai_packets = 1               # additive increase per RTT
//   beta = 0.8                   # multiplicative decrease gain
//   max_mdf = 0.5                # largest decrease per RTT
//   fs_range_us = 125            # flow-scaling range (5 × base target)
//   fs_min_cwnd_packets = 0.1
//   fs_max_cwnd_packets = 100
//   initial_cwnd_packets = 0     # 0: one bandwidth-delay product
//
//   [network.hybrid]             # RTT half: [network.swift]; ECN half: [network.dcqcn]'s
//   ecn_weight = 1               # marking, α and τ, its cut scaled by ecn_weight
//
//   [network.pfc]                # IEEE 802.1Qbb, per switch ingress port
//   enabled = true
//   xoff_bytes = 512e3           # pause the upstream port above
//   xon_bytes = 256e3            # resume below
#include "config/network_section.hpp"

namespace twinscale::config {

namespace {

void parse_dcqcn(TableReader d, topology::DcqcnSpec& s) {
  s.kmin_bytes = d.get_double("kmin_bytes", s.kmin_bytes, 0);
  s.kmax_bytes = d.get_double("kmax_bytes", s.kmax_bytes, 1);
  if (!(s.kmax_bytes > s.kmin_bytes))
    d.fail("kmax_bytes", "must be > kmin_bytes (" + std::to_string(s.kmin_bytes) + ")");
  s.pmax = d.get_double("pmax", s.pmax, 1e-9, 1);
  s.g = d.get_double("g", s.g, 1e-9, 1);
  s.tau_s = d.get_double("tau_us", s.tau_s * 1e6, 1e-3, 1e6) * 1e-6;
  s.tau_alpha_s = d.get_double("tau_alpha_us", s.tau_alpha_s * 1e6, 1e-3, 1e6) * 1e-6;
  s.timer_s = d.get_double("timer_us", s.timer_s * 1e6, 1e-3, 1e6) * 1e-6;
  s.byte_counter_bytes = d.get_double("byte_counter_bytes", s.byte_counter_bytes, 1);
  s.rai_bytes_per_s = d.get_double("rai_mbit_per_s", s.rai_bytes_per_s * 8 / 1e6, 1e-6) * 1e6 / 8;
  s.fast_recovery_steps = d.get_int("fast_recovery_steps", s.fast_recovery_steps, 0, 1000000);
  s.rhai_bytes_per_s = d.get_double("rhai_mbit_per_s", s.rhai_bytes_per_s * 8 / 1e6, 0) * 1e6 / 8;
  s.min_rate_bytes_per_s = d.get_double("min_rate_mbit_per_s", s.min_rate_bytes_per_s * 8 / 1e6, 1e-6) * 1e6 / 8;
  d.finish();
}

void parse_swift(TableReader w, topology::SwiftSpec& s) {
  s.base_target_s = w.get_double("base_target_us", s.base_target_s * 1e6, 1e-3, 1e6) * 1e-6;
  s.hop_scale_s = w.get_double("hop_scale_us", s.hop_scale_s * 1e6, 0, 1e6) * 1e-6;
  s.ai_packets = w.get_double("ai_packets", s.ai_packets, 1e-6, 1e6);
  s.beta = w.get_double("beta", s.beta, 1e-6, 1);
  s.max_mdf = w.get_double("max_mdf", s.max_mdf, 1e-6, 0.999);
  s.fs_range_s = w.get_double("fs_range_us", s.fs_range_s * 1e6, 0, 1e6) * 1e-6;
  s.fs_min_cwnd_packets = w.get_double("fs_min_cwnd_packets", s.fs_min_cwnd_packets, 1e-6);
  s.fs_max_cwnd_packets = w.get_double("fs_max_cwnd_packets", s.fs_max_cwnd_packets, 1e-6);
  if (!(s.fs_max_cwnd_packets > s.fs_min_cwnd_packets))
    w.fail("fs_max_cwnd_packets", "must be > fs_min_cwnd_packets (" + std::to_string(s.fs_min_cwnd_packets) + ")");
  s.initial_cwnd_packets = w.get_double("initial_cwnd_packets", s.initial_cwnd_packets, 0);
  w.finish();
}

} // namespace

topology::NetworkCcSpec parse_network(TableReader& cluster) {
  using topology::CongestionControl;
  topology::NetworkCcSpec s;
  TableReader n = cluster.table("network");
  s.congestion_control = n.get_enum<CongestionControl>("congestion_control",
                                                       {{"none", CongestionControl::None},
                                                        {"dcqcn", CongestionControl::Dcqcn},
                                                        {"swift", CongestionControl::Swift},
                                                        {"hybrid", CongestionControl::Hybrid}},
                                                       CongestionControl::None);
  s.mtu_bytes = n.get_double("mtu_bytes", s.mtu_bytes, 64, 65536);
  s.feedback_delay_s = n.get_double("feedback_delay_us", s.feedback_delay_s * 1e6, 0, 1e6) * 1e-6;
  s.buffer_bytes = n.get_double("buffer_bytes", s.buffer_bytes, 1);
  parse_dcqcn(n.table("dcqcn"), s.dcqcn);
  parse_swift(n.table("swift"), s.swift);
  {
    TableReader h = n.table("hybrid");
    s.hybrid.ecn_weight = h.get_double("ecn_weight", s.hybrid.ecn_weight, 0, 2);
    h.finish();
  }
  {
    TableReader p = n.table("pfc");
    s.pfc.enabled = p.get_bool("enabled", s.pfc.enabled);
    s.pfc.xoff_bytes = p.get_double("xoff_bytes", s.pfc.xoff_bytes, 1);
    s.pfc.xon_bytes = p.get_double("xon_bytes", s.pfc.xon_bytes, 0);
    if (!(s.pfc.xon_bytes < s.pfc.xoff_bytes))
      p.fail("xon_bytes",
             "must be < xoff_bytes (" + std::to_string(s.pfc.xoff_bytes) + "): resume below the pause threshold");
    p.finish();
  }
  n.finish();
  return s;
}

} // namespace twinscale::config
