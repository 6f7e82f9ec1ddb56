#include "sim/detail/analytic_backend.hpp"

#include "schedules/error.hpp"

namespace twinscale::sim::detail {

AnalyticBackend::AnalyticBackend(CompletionListener& listener, size_t slots, double slowdown)
    : listener_(listener), slowdown_(slowdown), compute_(slots), comm_active_(slots, false) {}

void AnalyticBackend::schedule_compute(int32_t slot) {
  Compute& c = compute_[static_cast<size_t>(slot)];
  ++c.version;
  queue_.push({now_ + c.remaining_s / c.rate, seq_++, true, static_cast<uint32_t>(slot), c.version});
}

void AnalyticBackend::start_compute(int32_t slot, double seconds) {
  Compute& c = compute_[static_cast<size_t>(slot)];
  TWINSCALE_ASSERT(!c.running, "two compute ops at once on one rank");
  c.running = true;
  c.remaining_s = seconds;
  c.rate = comm_active_[static_cast<size_t>(slot)] ? 1.0 / (1.0 + slowdown_) : 1.0;
  c.since = now_;
  schedule_compute(slot);
}

void AnalyticBackend::set_comm_active(int32_t slot, bool active) {
  comm_active_[static_cast<size_t>(slot)] = active;
  Compute& c = compute_[static_cast<size_t>(slot)];
  if (!c.running || slowdown_ == 0) return;
  c.remaining_s -= (now_ - c.since) * c.rate;
  if (c.remaining_s < 0) c.remaining_s = 0;
  c.since = now_;
  c.rate = active ? 1.0 / (1.0 + slowdown_) : 1.0;
  schedule_compute(slot);
}

void AnalyticBackend::start_comm(uint32_t comm_id, CommTask task) {
  TWINSCALE_ASSERT(task.closed_form_s >= 0, "analytic backend needs closed-form communication");
  queue_.push({now_ + task.closed_form_s, seq_++, false, comm_id, 0});
}

void AnalyticBackend::run(const std::function<void()>& start) {
  start();
  while (!queue_.empty()) {
    const Event e = queue_.top();
    queue_.pop();
    if (e.compute) {
      Compute& c = compute_[e.id];
      if (!c.running || c.version != e.version) continue; // rescheduled
      now_ = e.time;
      c.running = false;
      listener_.on_compute_done(static_cast<int32_t>(e.id));
    } else {
      now_ = e.time;
      listener_.on_comm_done(e.id, false, 0.0);
    }
  }
}

} // namespace twinscale::sim::detail
