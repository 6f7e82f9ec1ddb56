// DCQCN's fluid equations (Zhu, Ghobadi, Misra, Padhye, "ECN or Delay: Lessons Learnt
// from Analysis of DCQCN and TIMELY", CoNEXT'16, eqs. 1–4) and their fixed point; the
// fluid model integrates the first, the validation compares it with the second
// (docs/congestion.md). Rates are bytes/s; the paper's packet counts are rate · time /
// MTU.
#pragma once

#include "topology/congestion_spec.hpp"

namespace twinscale::sim::congestion {

struct DcqcnDerivatives {
  double drc = 0;    // d R_C / dt, bytes/s²
  double drt = 0;    // d R_T / dt
  double dalpha = 0; // d α / dt, 1/s
};

/// The right-hand side for one flow whose packets are marked with probability `p`.
DcqcnDerivatives dcqcn_derivatives(const topology::DcqcnSpec& d, double mtu_bytes, double rc, double rt, double alpha,
                                   double p);

/// Hyper increase (not in the CoNEXT'16 fluid model, which merges the increase stages):
/// `quiet_s` is the expected time since the flow's last rate cut, d quiet/dt = 1 − quiet ·
/// (CNP rate a/τ); the counters have expired quiet/T and quiet · R_C/B times, and past F
/// on both every increase event (rate b) adds i · R_HAI to R_T, i = min of the two − F.
struct DcqcnHyper {
  double drt = 0;    // added to d R_T / dt
  double dquiet = 0; // d quiet / dt
};
DcqcnHyper dcqcn_hyper(const topology::DcqcnSpec& d, double mtu_bytes, double rc, double quiet_s, double p);

/// The fixed point of N flows sharing one bottleneck of `capacity` (R_C = capacity / N):
/// marking probability p*, α*, R_T − R_C and the queue q* whose RED probability is p*.
struct DcqcnFixedPoint {
  double p = 0;
  double alpha = 0;
  double rt_minus_rc = 0;
  double queue_bytes = 0;
};
DcqcnFixedPoint dcqcn_fixed_point(const topology::DcqcnSpec& d, double mtu_bytes, double capacity_bytes_per_s,
                                  int flows);

/// How fast n flows sharing a bottleneck converge to fair shares (docs/congestion.md,
/// "Convergence"). The system is symmetric in the flows, so to first order around the
/// fixed point the differences between flows (x_i − x_j, x = (R_C, R_T, α)) evolve on
/// their own: every flow sees the same marking p*, which moves only with the sum of the
/// rates. They follow d(Δx)/dt = J Δx, J the 3×3 Jacobian of one flow's equations in its
/// own state at p* (dcqcn_derivatives). The rate gap decays as e^(−λt), λ = the smallest
/// −Re(eigenvalue) of J; the time for a gap to shrink by a factor k is ln(k) / λ.
struct DcqcnConvergence {
  double decay_per_s = 0;    // λ
  double oscillation_hz = 0; // |Im| / 2π of the slowest eigenvalue (0: real)
};
DcqcnConvergence dcqcn_convergence(const topology::DcqcnSpec& d, double mtu_bytes, double capacity_bytes_per_s,
                                   int flows);

/// Swift's equilibrium on one bottleneck shared by N flows: the RTT equals the target,
/// and the target depends on the window (flow scaling): the RTT r with
/// r = target(cwnd = capacity · r / N). Returns r in seconds.
double swift_equilibrium_rtt_s(const topology::SwiftSpec& s, double mtu_bytes, double capacity_bytes_per_s, int flows,
                               int hops);

} // namespace twinscale::sim::congestion
