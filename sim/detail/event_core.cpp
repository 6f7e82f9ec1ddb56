#include "sim/detail/event_core.hpp"

#include <algorithm>

#include "schedules/error.hpp"

namespace twinscale::sim::detail {

EventCore::EventCore(CompletionListener& listener, size_t slots, double slowdown)
    : listener_(listener), slowdown_(slowdown), gpus_(slots) {}

double EventCore::rate(const Gpu& g) const {
  const double base = g.speed * (g.comm_active ? 1.0 / (1.0 + slowdown_) : 1.0);
  return g.running.empty() ? base : base / static_cast<double>(g.running.size());
}

void EventCore::advance(Gpu& g) {
  const double done = (now_ - g.since) * rate(g);
  if (done > 0)
    for (auto& r : g.running) r.remaining_s = std::max(0.0, r.remaining_s - done);
  g.since = now_;
}

void EventCore::reschedule(int32_t slot) {
  Gpu& g = gpus_[static_cast<size_t>(slot)];
  ++g.version;
  if (g.running.empty()) return;
  // the op with the least work left finishes first (ties: the earliest started)
  size_t first = 0;
  for (size_t i = 1; i < g.running.size(); ++i)
    if (g.running[i].remaining_s < g.running[first].remaining_s) first = i;
  const double r = rate(g);
  const double at = r > 0 ? now_ + g.running[first].remaining_s / r : now_ + 1e300;
  queue_.push({at, seq_++, Kind::Compute, slot, g.running[first].op, g.version, 0});
}

void EventCore::start_compute(int32_t slot, uint32_t op, double seconds) {
  Gpu& g = gpus_[static_cast<size_t>(slot)];
  advance(g);
  g.running.push_back({op, seconds});
  reschedule(slot);
}

void EventCore::set_comm_active(int32_t slot, bool active) {
  Gpu& g = gpus_[static_cast<size_t>(slot)];
  if (g.comm_active == active) return;
  advance(g);
  g.comm_active = active;
  if (slowdown_ != 0) reschedule(slot);
}

void EventCore::add_timer(double at, uint32_t comm_id) {
  queue_.push({at, seq_++, Kind::Timer, -1, comm_id, 0, 0});
}

void EventCore::add_speed_change(double at, int32_t slot, double speed) {
  queue_.push({at, seq_++, Kind::Speed, slot, 0, 0, speed});
}

void EventCore::dispatch_next() {
  const Event e = queue_.top();
  queue_.pop();
  switch (e.kind) {
  case Kind::Timer:
    now_ = e.time;
    listener_.on_comm_done(e.id, false, 0.0);
    return;
  case Kind::Speed: {
    now_ = e.time;
    Gpu& g = gpus_[static_cast<size_t>(e.slot)];
    advance(g);
    g.speed = e.speed;
    reschedule(e.slot);
    return;
  }
  case Kind::Compute: {
    Gpu& g = gpus_[static_cast<size_t>(e.slot)];
    if (g.version != e.version) return; // rescheduled since
    now_ = e.time;
    advance(g);
    auto it = std::find_if(g.running.begin(), g.running.end(), [&](const Running& r) { return r.op == e.id; });
    TWINSCALE_ASSERT(it != g.running.end(), "completed compute op not running");
    g.running.erase(it);
    reschedule(e.slot);
    listener_.on_compute_done(e.slot, e.id);
    return;
  }
  }
}

} // namespace twinscale::sim::detail
