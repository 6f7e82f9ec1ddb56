// Where one executed rank's time goes, accumulated while the simulation runs (no per-op
// record): the executor reports each change of what the rank is doing at the current
// time, which never decreases, and the interval since the previous change is charged
// to the highest-ranked activity then under way — compute, then exposed TP, EP, DP and PP
// communication, then a pipeline receive waiting for its peer (bubble). An interval with
// nothing under way is idle between the rank's first and last op and bubble before the
// first and after the last in a pipelined job. The result is that of rank_breakdown()
// (breakdown.hpp) over the same op timings, which the tests check.
#pragma once

#include <array>
#include <cstdint>

#include "sim/simulate.hpp"

namespace twinscale::sim::detail {

enum class Activity : uint8_t { Compute = 0, Tp, Ep, Dp, Pp, RecvWait };
inline constexpr int kActivityCount = 6;

class RankAccount {
public:
  /// The rank starts (+1) or stops (−1) an activity at `t`.
  void change(double t, Activity a, int delta) {
    charge(t);
    active_[static_cast<size_t>(a)] = static_cast<int8_t>(active_[static_cast<size_t>(a)] + delta);
  }
  /// An op of the rank was issued or ended at `t` (closes a gap as idle).
  void touch(double t) {
    charge(t);
    started_ = true;
  }
  void add_compute(bool forward, double seconds) { (forward ? forward_s_ : backward_s_) += seconds; }
  /// Charges the time up to `horizon` (the makespan); the trailing gap is bubble when
  /// `pipelined`. Call once, after the run.
  void finish(double horizon) {
    trailing_ = true;
    charge(horizon);
  }
  void set_pipelined(bool p) { pipelined_ = p; }

  const Breakdown& breakdown() const { return b_; }
  double forward_s() const { return forward_s_; }
  double backward_s() const { return backward_s_; }

private:
  void charge(double t) {
    if (!(t > prev_)) return;
    const double d = t - prev_;
    prev_ = t;
    if (active_[0] > 0)
      b_.compute_s += d;
    else if (active_[1] > 0)
      b_.exposed_tp_s += d;
    else if (active_[2] > 0)
      b_.exposed_ep_s += d;
    else if (active_[3] > 0)
      b_.exposed_dp_s += d;
    else if (active_[4] > 0)
      b_.exposed_pp_s += d;
    else if (active_[5] > 0)
      b_.bubble_s += d;
    else if (pipelined_ && (!started_ || trailing_))
      b_.bubble_s += d;
    else
      b_.idle_s += d;
  }

  // ops under way per activity: at most one per stream (8), so a byte each (the account
  // shares the rank's hot cache lines)
  std::array<int8_t, kActivityCount> active_{};
  bool started_ = false;
  bool trailing_ = false;
  bool pipelined_ = false;
  double prev_ = 0;
  Breakdown b_;
  double forward_s_ = 0;
  double backward_s_ = 0;
};

} // namespace twinscale::sim::detail
