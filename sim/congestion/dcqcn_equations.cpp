#include "sim/congestion/dcqcn_equations.hpp"

#include <algorithm>
#include <cmath>

namespace twinscale::sim::congestion {

namespace {

/// 1 − (1 − p)^n: the probability that at least one of n packets is marked.
double any_marked(double p, double n) { return -std::expm1(n * std::log1p(-std::min(p, 1 - 1e-15))); }

/// p / ((1 − p)^−n − 1): the rate (per packet) of increase events of a counter of n
/// packets that a mark resets; 1/n as p → 0.
double increase_events(double p, double n) {
  if (p < 1e-15) return 1 / n;
  const double denom = std::expm1(-n * std::log1p(-std::min(p, 1 - 1e-15)));
  return denom > 0 ? p / denom : 0;
}

struct Terms {
  double a = 0;       // P(CNP in τ)
  double a_alpha = 0; // P(mark in τ')
  double b = 0;       // increase events per second (byte counter + timer)
};

Terms terms(const topology::DcqcnSpec& d, double mtu, double rc, double p) {
  const double pkts_per_s = rc / mtu;
  Terms t;
  t.a = any_marked(p, d.tau_s * pkts_per_s);
  t.a_alpha = any_marked(p, d.tau_alpha_s * pkts_per_s);
  t.b = pkts_per_s * (increase_events(p, d.byte_counter_bytes / mtu) + increase_events(p, d.timer_s * pkts_per_s));
  return t;
}

} // namespace

DcqcnDerivatives dcqcn_derivatives(const topology::DcqcnSpec& d, double mtu_bytes, double rc, double rt, double alpha,
                                   double p) {
  const Terms t = terms(d, mtu_bytes, rc, p);
  DcqcnDerivatives out;
  out.dalpha = d.g / d.tau_alpha_s * (t.a_alpha - alpha);
  out.drt = -(rt - rc) / d.tau_s * t.a + d.rai_bytes_per_s * t.b;
  out.drc = -rc * alpha / (2 * d.tau_s) * t.a + (rt - rc) / 2 * t.b;
  return out;
}

DcqcnFixedPoint dcqcn_fixed_point(const topology::DcqcnSpec& d, double mtu_bytes, double capacity_bytes_per_s,
                                  int flows) {
  const double rc = capacity_bytes_per_s / flows;
  // dα = 0: α = a_α; dR_T = 0: Δ = τ R_AI b / a; dR_C = 0: R_C α a / τ = Δ b.
  // Hence h(p) = R_C α a² − τ² R_AI b² = 0, increasing in p, negative at p → 0.
  auto h = [&](double p) {
    const Terms t = terms(d, mtu_bytes, rc, p);
    return rc * t.a_alpha * t.a * t.a - d.tau_s * d.tau_s * d.rai_bytes_per_s * t.b * t.b;
  };
  double lo = 1e-12, hi = 1;
  for (int i = 0; i < 200; ++i) {
    const double mid = std::sqrt(lo * hi); // bisection in log space: p spans decades
    (h(mid) > 0 ? hi : lo) = mid;
  }
  DcqcnFixedPoint fp;
  fp.p = std::sqrt(lo * hi);
  const Terms t = terms(d, mtu_bytes, rc, fp.p);
  fp.alpha = t.a_alpha;
  fp.rt_minus_rc = d.tau_s * d.rai_bytes_per_s * t.b / t.a;
  fp.queue_bytes = fp.p >= d.pmax ? d.kmax_bytes : d.kmin_bytes + fp.p / d.pmax * (d.kmax_bytes - d.kmin_bytes);
  return fp;
}

double swift_equilibrium_rtt_s(const topology::SwiftSpec& s, double mtu_bytes, double capacity_bytes_per_s, int flows,
                               int hops) {
  const double a = s.fs_range_s / (1 / std::sqrt(s.fs_min_cwnd_packets) - 1 / std::sqrt(s.fs_max_cwnd_packets));
  const double b = -a / std::sqrt(s.fs_max_cwnd_packets);
  auto target = [&](double rtt) {
    const double cwnd_pk = capacity_bytes_per_s * rtt / flows / mtu_bytes;
    return s.base_target_s + s.hop_scale_s * hops + std::clamp(a / std::sqrt(cwnd_pk) + b, 0.0, s.fs_range_s);
  };
  // target(r) decreases in r, so r − target(r) is increasing: bisection.
  double lo = 1e-9, hi = 1;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (mid - target(mid) > 0 ? hi : lo) = mid;
  }
  return 0.5 * (lo + hi);
}

} // namespace twinscale::sim::congestion
