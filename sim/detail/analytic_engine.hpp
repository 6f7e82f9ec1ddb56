// The analytic backend: the event core alone, no SimGrid. Compute ops as in
// event_core.hpp; communication tasks take their closed form.
#pragma once

#include "sim/detail/event_core.hpp"
#include "sim/detail/time_engine.hpp"

namespace twinscale::sim::detail {

class AnalyticEngine final : public TimeEngine {
public:
  AnalyticEngine(CompletionListener& listener, size_t slots, std::vector<double> comm_rate_factors)
      : core_(listener, slots, std::move(comm_rate_factors)) {}

  double now() const override { return core_.now(); }
  void start_compute(int32_t slot, uint32_t op, double seconds) override { core_.start_compute(slot, op, seconds); }
  void set_comm_ctas(int32_t slot, int32_t ctas) override { core_.set_comm_ctas(slot, ctas); }
  void start_comm(uint32_t comm_id, CommTask task) override;
  void run(const std::function<void()>& start) override;

private:
  EventCore core_;
};

} // namespace twinscale::sim::detail
