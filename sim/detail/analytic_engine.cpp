#include "sim/detail/analytic_engine.hpp"

#include "schedules/error.hpp"

namespace twinscale::sim::detail {

void AnalyticEngine::start_comm(uint32_t comm_id, CommTask task) {
  TWINSCALE_ASSERT(task.closed_form_s >= 0, "analytic backend needs closed-form communication");
  core_.add_timer(core_.now() + task.closed_form_s, comm_id);
}

void AnalyticEngine::run(const std::function<void()>& start) {
  start();
  while (!core_.empty()) core_.dispatch_next();
}

} // namespace twinscale::sim::detail
