// The flow engine's faults: fault plans' link profiles and crashes, degradation
// windows, and how long a flow was stalled by an outage on its path (see flow_engine.hpp).
#include "sim/detail/flow_engine_impl.hpp"

namespace twinscale::sim::detail {

/// Fault plan → SimGrid link profiles (attached before sealing) and compute speed
/// changes, M13 semantics:
///  - link outage shorter than the tolerated one (timeout × retries): bandwidth 1 B/s for
///    its duration on both directions, flows stall then resume;
///  - longer: 1 B/s from at_s, then the link goes OFF at at_s + tolerated (flows on it
///    fail: the collective and the job fail), ON again at until_s if it comes back;
///  - GPU slowdown: the executed rank on that GPU computes at 1 − slowdown of its speed
///    during the event (the event core's speed scale: compute ops are not SimGrid
///    activities, see flow_engine.hpp);
///  - server crash: the job fails at at_s (every rank of a synchronous job stops).
void FlowEngine::Impl::apply_fault_plan() {
  if (options.faults == nullptr) return;
  const faults::FaultPlan& plan = *options.faults;
  const double tolerated = plan.retransmit.tolerated_outage_s();
  std::map<uint32_t, std::vector<const faults::PlanEvent*>> by_link;
  for (const auto& e : plan.events) {
    if (e.target_index < 0)
      throw SimError("fault plan: event on '" + e.target + "' was not validated against the fabric");
    if (e.is_link_outage()) {
      if (e.target_index >= static_cast<int64_t>(zone->up_.size()))
        throw SimError("fault plan: link index " + std::to_string(e.target_index) + " outside the fabric");
      by_link[static_cast<uint32_t>(e.target_index)].push_back(&e);
    } else if (e.kind == faults::PlanEventKind::GpuSlowdown) {
      for (size_t s = 0; s < slot_gpu.size(); ++s) {
        if (slot_gpu[s] != e.target_index) continue;
        core.add_speed_change(e.at_s, static_cast<int32_t>(s), e.speed_factor());
        if (e.until_s < faults::kForever) core.add_speed_change(e.until_s, static_cast<int32_t>(s), 1.0);
      }
    }
  }
  auto num = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return std::string(buf);
  };
  for (auto& [link, events] : by_link) {
    std::string bw_text, state_text;
    const double bw = paths.link_bw(link);
    for (const auto* e : events) {
      const bool stall = faults::outage_outcome(e->duration_s(), plan.retransmit) == faults::OutageOutcome::Stall;
      bw_text += num(e->at_s) + " 1\n";
      if (e->until_s < faults::kForever) bw_text += num(e->until_s) + " " + num(bw) + "\n";
      if (!stall) {
        state_text += num(e->at_s + tolerated) + " 0\n";
        if (e->until_s < faults::kForever) state_text += num(e->until_s) + " 1\n";
      }
      link_stalls[link].push_back({e->at_s, stall ? e->until_s : e->at_s + tolerated});
    }
    for (int dir = 0; dir < 2; ++dir) {
      sg4::Link* l = dir == 0 ? zone->up_[link] : zone->down_[link];
      const std::string name = "fault-l" + std::to_string(link) + (dir == 0 ? "-up" : "-down");
      l->set_bandwidth_profile(simgrid::kernel::profile::ProfileBuilder::from_string(name + "-bw", bw_text, -1));
      if (!state_text.empty())
        l->set_state_profile(simgrid::kernel::profile::ProfileBuilder::from_string(name + "-state", state_text, -1));
    }
  }
}

/// Degradation windows, exact in SimGrid 3.32's CM02: a degraded link direction keeps
/// its nominal bandwidth, so the bound CM02 puts on a flow when it starts (the smallest
/// bandwidth on its path, never lifted) is never below what the link gives it once the
/// window ends. Its max-min constraint is NONLINEAR, with a callback returning the
/// capacity × the factor in effect: the LMM evaluates it each time it solves the
/// constraint (maxmin.cpp, dyn_constraint_cb_), on top of any PFC pause the congestion
/// model sets. At each window edge a kernel timer sets the factor and re-sets the
/// bandwidth to its current value, which marks the constraint modified: the LMM
/// re-solves it at that instant and flows in flight move at the new rate from there
/// (their bytes so far counted at the old one).
void FlowEngine::Impl::apply_degradation_windows() {
  const DegradationWindows* windows = paths.windows();
  if (windows == nullptr) return;
  window_factor.assign(zone->up_.size(), 1.0);
  std::vector<bool> done(zone->up_.size(), false);
  for (const auto& w : windows->list()) {
    window_factor[w.link] = windows->factor(w.link, 0.0);
    if (done[w.link]) continue;
    done[w.link] = true;
    const double* factor = &window_factor[w.link]; // the vector is never resized again
    auto cb = [factor](double capacity, int /*flows*/) { return capacity * *factor; };
    zone->up_[w.link]->set_sharing_policy(sg4::Link::SharingPolicy::NONLINEAR, cb);
    zone->down_[w.link]->set_sharing_policy(sg4::Link::SharingPolicy::NONLINEAR, cb);
  }
}

/// The timers at the windows' edges after time 0 (before: the factor set when the
/// platform was built).
void FlowEngine::Impl::arm_window_timers() {
  const DegradationWindows* windows = paths.windows();
  if (windows == nullptr) return;
  auto edge = [this](double at, uint32_t link, double factor) {
    if (!(at > 0) || std::isinf(at)) return;
    const size_t index = window_timers.size();
    window_timers.push_back(simgrid::kernel::timer::Timer::set(at, [this, index, link, factor]() {
      window_timers[index] = nullptr; // fired: no longer to remove
      window_factor[link] = factor;
      for (sg4::Link* l : {zone->up_[link], zone->down_[link]}) l->set_bandwidth(l->get_bandwidth());
    }));
  };
  for (const auto& w : windows->list()) {
    edge(w.at_s, w.link, w.factor);
    edge(w.until_s, w.link, 1.0);
  }
}

double FlowEngine::Impl::stalled_seconds(const FlowSpec& f, double start, double end) const {
  if (link_stalls.empty()) return 0;
  std::vector<topology::Hop> hops;
  paths.route(f.src_gpu, f.dst_gpu, f.channel, hops);
  double stalled = 0;
  for (const auto& h : hops) {
    auto it = link_stalls.find(h.link);
    if (it == link_stalls.end()) continue;
    for (const auto& [a, b] : it->second) stalled += std::max(0.0, std::min(b, end) - std::max(a, start));
  }
  return stalled;
}

/// When a flow that wants to start at `t` can start: after every outage on its path that
/// covers `t`. CM02 bounds a comm by the bandwidth its links have when it starts, so a
/// comm started at 1 B/s would stay at 1 B/s after the link recovers; a flow that would
/// start during an outage therefore waits for its end (the same stall: no progress, then
/// resume), or for the retransmit limit, after which the link is OFF and it fails.
double FlowEngine::Impl::stall_end(const FlowSpec& f, double t) const {
  if (link_stalls.empty()) return t;
  std::vector<topology::Hop> hops;
  paths.route(f.src_gpu, f.dst_gpu, f.channel, hops);
  for (bool moved = true; moved;) {
    moved = false;
    for (const auto& h : hops) {
      auto it = link_stalls.find(h.link);
      if (it == link_stalls.end()) continue;
      for (const auto& [a, b] : it->second)
        if (t >= a && t < b) {
          t = b;
          moved = true;
        }
    }
  }
  return t;
}

} // namespace twinscale::sim::detail
