#include "sim/detail/breakdown.hpp"

#include <algorithm>
#include <array>

namespace twinscale::sim::detail {

using schedules::GroupKind;
using schedules::OpKind;
using schedules::Phase;

namespace {

enum Cat : int { kCompute = 0, kTp, kEp, kDp, kPp, kRecvWait, kCats };

struct Edge {
  double t;
  int cat;
  int delta;
  bool operator<(const Edge& o) const { return t != o.t ? t < o.t : delta < o.delta; }
};

} // namespace

Breakdown rank_breakdown(const schedules::Program& program, const std::vector<OpTiming>& timing, double horizon,
                         bool pipelined) {
  std::vector<Edge> edges;
  edges.reserve(timing.size() * 2);
  double first = horizon, last = 0;
  auto add = [&](double a, double b, int cat) {
    if (!(b > a)) return;
    edges.push_back({a, cat, +1});
    edges.push_back({b, cat, -1});
  };
  for (size_t i = 0; i < timing.size(); ++i) {
    const OpTiming& t = timing[i];
    if (t.start_s < 0 || t.end_s < 0) continue;
    const auto& op = program.ops[i];
    first = std::min(first, t.start_s);
    last = std::max(last, t.end_s);
    if (!op.is_communication()) {
      add(t.start_s, t.end_s, kCompute);
      continue;
    }
    const double xfer = t.transfer_s >= 0 ? t.transfer_s : t.end_s;
    int cat = kDp;
    if (op.group == GroupKind::Cp) // the context-parallel ring: in-layer model-parallel traffic
      cat = kTp;
    else if (op.kind == OpKind::Send || op.kind == OpKind::Recv)
      cat = kPp;
    else if (schedules::is_expert_parallel(op.group)) // the MoE all-to-alls
      cat = kEp;
    else if (op.group == GroupKind::Tp) // in-layer model-parallel traffic
      cat = kTp;
    add(xfer, t.end_s, cat);
    if (op.kind == OpKind::Recv && op.group == GroupKind::Pp) add(t.start_s, xfer, kRecvWait);
    // a context-parallel ring receive waiting for the ring: the ring's cost, not a bubble
    if (op.kind == OpKind::Recv && op.group == GroupKind::Cp) add(t.start_s, xfer, kTp);
  }
  std::sort(edges.begin(), edges.end());
  Breakdown b;
  std::array<int, kCats> active{};
  double prev = 0;
  auto account = [&](double a, double c) {
    if (c > horizon) c = horizon;
    if (!(c > a)) return;
    const double d = c - a;
    if (active[kCompute] > 0)
      b.compute_s += d;
    else if (active[kTp] > 0)
      b.exposed_tp_s += d;
    else if (active[kEp] > 0)
      b.exposed_ep_s += d;
    else if (active[kDp] > 0)
      b.exposed_dp_s += d;
    else if (active[kPp] > 0)
      b.exposed_pp_s += d;
    else if (active[kRecvWait] > 0)
      b.bubble_s += d;
    else if (pipelined && (c <= first || a >= last))
      b.bubble_s += d;
    else
      b.idle_s += d;
  };
  for (const Edge& e : edges) {
    // split at first/last so fill and drain are classified exactly
    for (double cut : {first, last})
      if (cut > prev && cut < e.t) {
        account(prev, cut);
        prev = cut;
      }
    account(prev, e.t);
    prev = std::max(prev, e.t);
    active[static_cast<size_t>(e.cat)] += e.delta;
  }
  if (last > prev) {
    account(prev, last);
    prev = last;
  }
  account(prev, horizon);
  return b;
}

RankTimes rank_times(const schedules::Program& program, const std::vector<OpTiming>& timing, const Breakdown& b) {
  RankTimes r;
  for (size_t i = 0; i < timing.size(); ++i) {
    const auto& op = program.ops[i];
    const OpTiming& t = timing[i];
    if (op.is_communication() || t.end_s < 0 || t.start_s < 0) continue;
    const double d = t.end_s - t.start_s;
    if (op.labels.phase == Phase::Forward)
      r.forward_s += d;
    else if (op.labels.phase == Phase::Backward || op.labels.phase == Phase::Recompute)
      r.backward_s += d;
  }
  r.comm_wait_s = b.exposed_tp_s + b.exposed_ep_s + b.exposed_pp_s + b.exposed_dp_s + b.bubble_s;
  return r;
}

} // namespace twinscale::sim::detail
