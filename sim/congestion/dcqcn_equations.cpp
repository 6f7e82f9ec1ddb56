#include "sim/congestion/dcqcn_equations.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <limits>

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

DcqcnHyper dcqcn_hyper(const topology::DcqcnSpec& d, double mtu_bytes, double rc, double quiet_s, double p) {
  const Terms t = terms(d, mtu_bytes, rc, p);
  DcqcnHyper out;
  out.dquiet = 1 - quiet_s * t.a / d.tau_s;
  if (d.rhai_bytes_per_s <= 0) return out;
  const double i =
      std::min(quiet_s / d.timer_s, quiet_s * rc / d.byte_counter_bytes) - static_cast<double>(d.fast_recovery_steps);
  if (i > 0) out.drt = d.rhai_bytes_per_s * i * t.b;
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

namespace {

/// The three roots of λ³ + c2 λ² + c1 λ + c0 (real coefficients): one real root by
/// bisection (the cubic changes sign between ±bound), the other two from the quotient.
std::array<std::complex<double>, 3> cubic_roots(double c2, double c1, double c0) {
  auto f = [&](double x) { return ((x + c2) * x + c1) * x + c0; };
  const double bound = 1 + std::max({std::abs(c2), std::abs(c1), std::abs(c0)});
  double lo = -bound, hi = bound; // f(lo) < 0 < f(hi)
  for (int i = 0; i < 400; ++i) {
    const double mid = 0.5 * (lo + hi);
    (f(mid) < 0 ? lo : hi) = mid;
  }
  const double r = 0.5 * (lo + hi);
  // λ³ + c2 λ² + c1 λ + c0 = (λ − r)(λ² + q1 λ + q0)
  const double q1 = c2 + r, q0 = c1 + r * q1;
  const std::complex<double> disc = std::sqrt(std::complex<double>(q1 * q1 - 4 * q0, 0));
  return {std::complex<double>(r, 0), (-q1 + disc) / 2.0, (-q1 - disc) / 2.0};
}

} // namespace

DcqcnConvergence dcqcn_convergence(const topology::DcqcnSpec& d, double mtu_bytes, double capacity_bytes_per_s,
                                   int flows) {
  const DcqcnFixedPoint fp = dcqcn_fixed_point(d, mtu_bytes, capacity_bytes_per_s, flows);
  const double x0[3] = {capacity_bytes_per_s / flows, capacity_bytes_per_s / flows + fp.rt_minus_rc, fp.alpha};
  auto rhs = [&](const double* x, double* out) {
    const DcqcnDerivatives r = dcqcn_derivatives(d, mtu_bytes, x[0], x[1], x[2], fp.p);
    out[0] = r.drc;
    out[1] = r.drt;
    out[2] = r.dalpha;
  };
  // J by central differences, relative steps.
  double j[3][3];
  for (int c = 0; c < 3; ++c) {
    double xp[3] = {x0[0], x0[1], x0[2]}, xm[3] = {x0[0], x0[1], x0[2]}, fp_[3], fm[3];
    const double h = 1e-6 * std::max(std::abs(x0[c]), c == 2 ? 1e-3 : 1.0);
    xp[c] += h;
    xm[c] -= h;
    rhs(xp, fp_);
    rhs(xm, fm);
    for (int r = 0; r < 3; ++r) j[r][c] = (fp_[r] - fm[r]) / (2 * h);
  }
  // Characteristic polynomial λ³ − tr λ² + m λ − det.
  const double tr = j[0][0] + j[1][1] + j[2][2];
  const double m = j[0][0] * j[1][1] - j[0][1] * j[1][0] + j[0][0] * j[2][2] - j[0][2] * j[2][0] + j[1][1] * j[2][2] -
                   j[1][2] * j[2][1];
  const double det = j[0][0] * (j[1][1] * j[2][2] - j[1][2] * j[2][1]) -
                     j[0][1] * (j[1][0] * j[2][2] - j[1][2] * j[2][0]) +
                     j[0][2] * (j[1][0] * j[2][1] - j[1][1] * j[2][0]);
  DcqcnConvergence out;
  out.decay_per_s = std::numeric_limits<double>::infinity();
  for (const auto& root : cubic_roots(-tr, m, -det)) {
    if (-root.real() < out.decay_per_s) {
      out.decay_per_s = -root.real();
      out.oscillation_hz = std::abs(root.imag()) / (2 * M_PI);
    }
  }
  return out;
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
