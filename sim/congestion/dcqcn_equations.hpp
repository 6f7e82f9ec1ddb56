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

/// Swift's equilibrium on one bottleneck shared by N flows: the RTT equals the target,
/// and the target depends on the window (flow scaling): the RTT r with
/// r = target(cwnd = capacity · r / N). Returns r in seconds.
double swift_equilibrium_rtt_s(const topology::SwiftSpec& s, double mtu_bytes, double capacity_bytes_per_s, int flows,
                               int hops);

} // namespace twinscale::sim::congestion
