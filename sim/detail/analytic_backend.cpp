#include "sim/detail/analytic_backend.hpp"

#include <algorithm>

#include "schedules/error.hpp"

namespace twinscale::sim::detail {

AnalyticBackend::AnalyticBackend(CompletionListener& listener, size_t slots, double slowdown)
    : listener_(listener), slowdown_(slowdown), gpus_(slots) {}

double AnalyticBackend::rate(const Gpu& g) const {
  const double base = g.comm_active ? 1.0 / (1.0 + slowdown_) : 1.0;
  return g.running.empty() ? base : base / static_cast<double>(g.running.size());
}

void AnalyticBackend::advance(Gpu& g) {
  const double done = (now_ - g.since) * rate(g);
  for (auto& r : g.running) r.remaining_s = std::max(0.0, r.remaining_s - done);
  g.since = now_;
}

void AnalyticBackend::reschedule(int32_t slot) {
  Gpu& g = gpus_[static_cast<size_t>(slot)];
  ++g.version;
  if (g.running.empty()) return;
  // the op with the least work left finishes first (ties: the earliest started)
  size_t first = 0;
  for (size_t i = 1; i < g.running.size(); ++i)
    if (g.running[i].remaining_s < g.running[first].remaining_s) first = i;
  queue_.push({now_ + g.running[first].remaining_s / rate(g), seq_++, true, slot, g.running[first].op, g.version});
}

void AnalyticBackend::start_compute(int32_t slot, uint32_t op, double seconds) {
  Gpu& g = gpus_[static_cast<size_t>(slot)];
  advance(g);
  g.running.push_back({op, seconds});
  reschedule(slot);
}

void AnalyticBackend::set_comm_active(int32_t slot, bool active) {
  Gpu& g = gpus_[static_cast<size_t>(slot)];
  if (g.comm_active == active) return;
  advance(g);
  g.comm_active = active;
  if (slowdown_ != 0) reschedule(slot);
}

void AnalyticBackend::start_comm(uint32_t comm_id, CommTask task) {
  TWINSCALE_ASSERT(task.closed_form_s >= 0, "analytic backend needs closed-form communication");
  queue_.push({now_ + task.closed_form_s, seq_++, false, -1, comm_id, 0});
}

void AnalyticBackend::run(const std::function<void()>& start) {
  start();
  while (!queue_.empty()) {
    const Event e = queue_.top();
    queue_.pop();
    if (!e.compute) {
      now_ = e.time;
      listener_.on_comm_done(e.id, false, 0.0);
      continue;
    }
    Gpu& g = gpus_[static_cast<size_t>(e.slot)];
    if (g.version != e.version) continue; // rescheduled since
    now_ = e.time;
    advance(g);
    auto it = std::find_if(g.running.begin(), g.running.end(), [&](const Running& r) { return r.op == e.id; });
    TWINSCALE_ASSERT(it != g.running.end(), "completed compute op not running");
    g.running.erase(it);
    reschedule(e.slot);
    listener_.on_compute_done(e.slot, e.id);
  }
}

} // namespace twinscale::sim::detail
