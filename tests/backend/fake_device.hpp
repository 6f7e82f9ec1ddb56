// A deterministic in-process device for executor tests: ops complete on the poll after
// they were issued (communication included, as if every peer were ready), except ops
// marked as stuck (never complete) or failing. Time is a counter of device calls.
#pragma once

#include <chrono>
#include <set>
#include <vector>

#include "backend/device.hpp"

namespace twinscale::backend::test {

class FakeDevice final : public Device {
public:
  explicit FakeDevice(bool orders_on_device) : on_device_(orders_on_device) {}

  std::set<uint32_t> stuck, failing;
  std::vector<uint32_t> issue_order;
  std::vector<std::vector<uint32_t>> wait_lists;   // per op, as passed to issue()
  std::vector<int> issued_at, done_at;             // call counter; -1 = never
  const schedules::Program* program = nullptr;

  std::string_view name() const override { return "fake"; }
  bool orders_on_device() const override { return on_device_; }
  void prepare(const schedules::Schedule& s, int64_t rank) override {
    program = &s.program(rank);
    issued_at.assign(program->ops.size(), -1);
    done_at.assign(program->ops.size(), -1);
    wait_lists.assign(program->ops.size(), {});
  }
  void issue(uint32_t i, std::span<const uint32_t> wait_for) override {
    issue_order.push_back(i);
    issued_at[i] = ++clock_;
    wait_lists[i].assign(wait_for.begin(), wait_for.end());
  }
  OpStatus poll(uint32_t i) override {
    if (failing.count(i)) return OpStatus::Failed;
    if (stuck.count(i)) return OpStatus::Pending;
    if (done_at[i] < 0) done_at[i] = ++clock_;
    return OpStatus::Done;
  }
  void wait_for_progress(double) override { ++idle_waits; }
  std::vector<DeviceOpTiming> timings() override {
    std::vector<DeviceOpTiming> t(issued_at.size());
    for (size_t i = 0; i < t.size(); ++i)
      if (done_at[i] >= 0) t[i] = DeviceOpTiming{issued_at[i] * 1e-6, done_at[i] * 1e-6, true};
    return t;
  }
  void abort() override { aborted = true; }
  double now_s() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  int idle_waits = 0;
  bool aborted = false;

private:
  bool on_device_;
  int clock_ = 0;
};

} // namespace twinscale::backend::test
