// The analytic backend: a plain event queue, no SimGrid. Compute ops progress at
// 1 / (1 + nccl_compute_slowdown) of their speed while the rank's NCCL kernels move data
// (rescheduled when that changes); communication tasks take their closed form.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "sim/detail/backend.hpp"

namespace twinscale::sim::detail {

class AnalyticBackend final : public Backend {
public:
  AnalyticBackend(CompletionListener& listener, size_t slots, double nccl_compute_slowdown);

  double now() const override { return now_; }
  void start_compute(int32_t slot, double seconds) override;
  void set_comm_active(int32_t slot, bool active) override;
  void start_comm(uint32_t comm_id, CommTask task) override;
  void run(const std::function<void()>& start) override;

private:
  struct Event {
    double time;
    uint64_t seq;
    bool compute;
    uint32_t id;       // slot or comm id
    uint64_t version;  // compute: valid only if equal to the slot's version
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  struct Compute {
    bool running = false;
    double remaining_s = 0; // nominal seconds left
    double rate = 1;
    double since = 0;
    uint64_t version = 0;
  };
  void schedule_compute(int32_t slot);

  CompletionListener& listener_;
  double slowdown_;
  double now_ = 0;
  uint64_t seq_ = 0;
  std::vector<Compute> compute_;
  std::vector<bool> comm_active_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
};

} // namespace twinscale::sim::detail
