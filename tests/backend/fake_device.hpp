// A deterministic in-process device for executor tests: ops complete on the poll after
// they were issued (communication included, as if every peer were ready), except ops
// marked as stuck (never complete), failing, or held back by NCCL's rule that the ops
// of one communicator (op_channel) complete in issue order. Time is a counter of
// device calls, except `now_s`, which is the steady clock (the watchdog's clock); ops
// in `slow` take that many seconds of it from their first poll (when the executor
// sees them at the head of their stream).
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backend/device.hpp"
#include "backend/executor.hpp"

namespace twinscale::backend::test {

class FakeDevice final : public Device {
public:
  explicit FakeDevice(bool orders_on_device) : on_device_(orders_on_device) {}

  std::set<uint32_t> stuck, failing;
  std::map<uint32_t, double> slow; // op → seconds it runs
  /// Stuck ops whose timing says they started this long after timings() is called (a
  /// stream that began the op after the rank decided to stop).
  std::map<uint32_t, double> late_start;
  std::vector<uint32_t> issue_order;
  std::vector<std::vector<uint32_t>> wait_lists; // per op, as passed to issue()
  std::vector<int> issued_at, done_at;           // call counter; -1 = never
  std::vector<double> issued_s;                  // steady clock at issue
  std::vector<double> started_s;                 // first poll (the op heads its stream)
  const schedules::Program* program = nullptr;

  std::string_view name() const override { return "fake"; }
  bool orders_on_device() const override { return on_device_; }
  void prepare(const schedules::Schedule& s, int64_t rank) override {
    program = &s.program(rank);
    issued_at.assign(program->ops.size(), -1);
    done_at.assign(program->ops.size(), -1);
    issued_s.assign(program->ops.size(), 0);
    started_s.assign(program->ops.size(), -1);
    wait_lists.assign(program->ops.size(), {});
    channel_.clear();
    for (const auto& op : program->ops) channel_.push_back(op_channel(s, rank, op));
  }
  void issue(uint32_t i, std::span<const uint32_t> wait_for) override {
    issue_order.push_back(i);
    issued_at[i] = ++clock_;
    issued_s[i] = now_s();
    wait_lists[i].assign(wait_for.begin(), wait_for.end());
    if (!channel_[i].empty()) queue_[channel_[i]].push_back(i);
  }
  OpStatus poll(uint32_t i) override {
    if (failing.count(i)) return OpStatus::Failed;
    if (done_at[i] >= 0) return OpStatus::Done;
    if (stuck.count(i)) return OpStatus::Pending;
    if (auto it = slow.find(i); it != slow.end()) { // runs from when it heads its stream
      if (started_s[i] < 0) started_s[i] = now_s();
      if (now_s() - started_s[i] < it->second) return OpStatus::Pending;
    }
    if (!channel_[i].empty()) { // NCCL: a communicator's ops complete in issue order
      auto& q = queue_[channel_[i]];
      if (q.front() != i) return OpStatus::Pending;
      q.pop_front();
    }
    done_at[i] = ++clock_;
    return OpStatus::Done;
  }
  void wait_for_progress(double) override { ++idle_waits; }
  std::vector<DeviceOpTiming> timings() override {
    std::vector<DeviceOpTiming> t(issued_at.size());
    for (size_t i = 0; i < t.size(); ++i)
      if (done_at[i] >= 0) t[i] = DeviceOpTiming{issued_at[i] * 1e-6, done_at[i] * 1e-6, true};
    for (const auto& [i, after] : late_start) t[i] = DeviceOpTiming{now_s() + after, now_s() + 2 * after, true};
    return t;
  }
  void abort() override {
    aborted = true;
    ++abort_calls;
  }
  double now_s() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  int idle_waits = 0;
  int abort_calls = 0;
  bool aborted = false;

private:
  bool on_device_;
  int clock_ = 0;
  std::vector<std::string> channel_;
  std::map<std::string, std::deque<uint32_t>> queue_;
};

} // namespace twinscale::backend::test
