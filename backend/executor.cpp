#include "backend/executor.hpp"

#include <algorithm>
#include <array>

#include "schedules/error.hpp"

namespace twinscale::backend {

using schedules::GroupKind;
using schedules::Op;
using schedules::OpKind;
using schedules::Schedule;

std::string_view to_string(RunStatus s) {
  switch (s) {
  case RunStatus::Completed: return "completed";
  case RunStatus::TimedOut: return "timed_out";
  case RunStatus::OpFailed: return "op_failed";
  case RunStatus::Aborted: return "aborted";
  }
  TWINSCALE_ASSERT(false, "unknown RunStatus");
}

std::string op_channel(const Schedule& schedule, int64_t rank, const Op& op) {
  if (!op.is_communication()) return {};
  const std::string group(schedules::to_string(op.group));
  if (op.is_collective()) return group;
  const auto members = schedule.layout.group_members(op.group, rank);
  TWINSCALE_ASSERT(op.peer >= 0 && op.peer < static_cast<int32_t>(members.size()),
                   "p2p peer outside its group");
  return (op.kind == OpKind::Send ? "send:" : "recv:") + group + ":" +
         std::to_string(members[static_cast<size_t>(op.peer)]);
}

std::vector<int64_t> op_peers(const Schedule& schedule, int64_t rank, const Op& op) {
  if (!op.is_communication()) return {};
  auto members = schedule.layout.group_members(op.group, rank);
  if (op.is_collective()) return members;
  return {members[static_cast<size_t>(op.peer)]};
}

Executor::Executor(const Schedule& schedule, int64_t rank, Device& device, ExecutorOptions options)
    : schedule_(schedule), rank_(rank), device_(device), options_(options) {
  TWINSCALE_ASSERT(rank >= 0 && rank < schedule.world(), "rank outside the schedule's world");
}

namespace {

enum class State : uint8_t { NotIssued, Issued, Done, Failed };

} // namespace

RankResult Executor::run() {
  const schedules::Program& program = schedule_.program(rank_);
  const size_t n = program.ops.size();
  device_.prepare(schedule_, rank_);
  const bool on_device = device_.orders_on_device();

  // Static structure: per-stream op lists, per-channel op lists (program order).
  std::array<std::vector<uint32_t>, schedules::kStreamCount> stream_ops;
  std::vector<int32_t> stream_prev(n, -1);
  std::map<std::string, std::vector<uint32_t>> channel_ops;
  std::vector<std::string> channel_of(n);
  std::vector<int64_t> sequence_of(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    const Op& op = program.ops[i];
    auto& list = stream_ops[static_cast<size_t>(op.stream)];
    if (!list.empty()) stream_prev[i] = static_cast<int32_t>(list.back());
    list.push_back(i);
    for (uint32_t d : program.deps_of(op))
      TWINSCALE_ASSERT(d < i, "dependency on a later op (schedule not validated?)");
    channel_of[i] = op_channel(schedule_, rank_, op);
    if (!channel_of[i].empty()) {
      auto& ch = channel_ops[channel_of[i]];
      sequence_of[i] = static_cast<int64_t>(ch.size());
      ch.push_back(i);
    }
  }

  std::vector<State> state(n, State::NotIssued);
  std::vector<double> issued_at(n, 0);
  std::array<size_t, schedules::kStreamCount> next_issue{};  // per stream
  std::array<size_t, schedules::kStreamCount> next_done{};   // per stream: oldest not done
  std::map<std::string, size_t> channel_next;
  RankResult result;
  result.rank = rank_;
  result.ops_total = static_cast<uint32_t>(n);

  auto satisfied = [&](uint32_t j) {
    return on_device ? state[j] != State::NotIssued : state[j] == State::Done;
  };
  std::vector<uint32_t> wait_for;
  auto ready = [&](uint32_t i) {
    if (stream_prev[i] >= 0 && !satisfied(static_cast<uint32_t>(stream_prev[i]))) return false;
    for (uint32_t d : program.deps_of(i))
      if (!satisfied(d)) return false;
    if (!channel_of[i].empty()) {
      const auto& ch = channel_ops[channel_of[i]];
      if (ch[channel_next[channel_of[i]]] != i) return false;  // a group's ops in program order
    }
    return true;
  };

  const double t_begin = device_.now_s();
  double last_progress = t_begin;
  uint32_t done_count = 0;
  bool failed = false, aborted = false;
  double last_abort_check = t_begin;
  while (done_count < n && !failed) {
    bool progressed = false;
    // Issue every op that became ready; repeat until a pass issues nothing, because
    // issuing on one stream can unblock a channel on another.
    for (bool again = true; again;) {
      again = false;
      for (size_t s = 0; s < stream_ops.size(); ++s) {
        auto& list = stream_ops[s];
        while (next_issue[s] < list.size() && ready(list[next_issue[s]])) {
          const uint32_t i = list[next_issue[s]];
          wait_for.assign(program.deps_of(i).begin(), program.deps_of(i).end());
          if (stream_prev[i] >= 0 &&
              std::find(wait_for.begin(), wait_for.end(), static_cast<uint32_t>(stream_prev[i])) ==
                  wait_for.end())
            wait_for.push_back(static_cast<uint32_t>(stream_prev[i]));
          device_.issue(i, wait_for);
          state[i] = State::Issued;
          issued_at[i] = device_.now_s();
          if (!channel_of[i].empty()) {
            ++channel_next[channel_of[i]];
            ++result.issued[channel_of[i]];
          }
          ++next_issue[s];
          again = progressed = true;
          if (!on_device) break;  // the next op on this stream waits for this one
        }
      }
    }
    // Streams complete in order: only the oldest outstanding op of each can finish next.
    for (size_t s = 0; s < stream_ops.size(); ++s) {
      auto& list = stream_ops[s];
      while (next_done[s] < next_issue[s]) {
        const uint32_t i = list[next_done[s]];
        const OpStatus st = device_.poll(i);
        if (st == OpStatus::Pending) break;
        state[i] = st == OpStatus::Done ? State::Done : State::Failed;
        ++next_done[s];
        progressed = true;
        if (st == OpStatus::Failed) {
          result.failed_ops.push_back(i);
          failed = true;
          break;
        }
        ++done_count;
      }
    }
    const double now = device_.now_s();
    if (progressed) {
      last_progress = now;
      continue;
    }
    if (now - last_progress > options_.timeout_s) break;
    if (!on_device) {  // an op is issued only when ready: its age is how long it has waited
      bool overdue = false;
      for (size_t s = 0; s < stream_ops.size() && !overdue; ++s)
        if (next_done[s] < next_issue[s] && now - issued_at[stream_ops[s][next_done[s]]] > options_.timeout_s)
          overdue = true;
      if (overdue) break;
    }
    if (options_.should_abort && now - last_abort_check > options_.abort_poll_s) {
      last_abort_check = now;
      if (options_.should_abort()) {
        aborted = true;
        break;
      }
    }
    device_.wait_for_progress(std::min(options_.idle_wait_s, options_.timeout_s));
  }
  const double t_end = device_.now_s();
  result.elapsed_s = t_end - t_begin;
  result.ops_completed = done_count;
  result.status = done_count == n ? RunStatus::Completed
                  : failed        ? RunStatus::OpFailed
                  : aborted       ? RunStatus::Aborted
                                  : RunStatus::TimedOut;
  if (result.status != RunStatus::Completed) {
    for (uint32_t i = 0; i < n; ++i) {
      if (state[i] != State::Issued) continue;
      const Op& op = program.ops[i];
      PendingOp p;
      p.op_index = i;
      p.name = op.name < schedule_.names.size() ? schedule_.names[op.name] : "";
      p.kind = op.kind;
      p.group = op.group;
      p.stream = op.stream;
      p.channel = channel_of[i];
      p.sequence = sequence_of[i];
      p.peers = op_peers(schedule_, rank_, op);
      p.waiting_s = t_end - issued_at[i];
      result.waiting.push_back(std::move(p));
    }
    device_.abort();
  }

  // M18: timings are read back once, after the run.
  const std::vector<DeviceOpTiming> timing = device_.timings();
  TWINSCALE_ASSERT(timing.size() == n, "device returned timings of another program");
  for (uint32_t i = 0; i < n; ++i) {
    if (state[i] == State::NotIssued) continue;
    schedules::TraceEvent e;
    e.rank = rank_;
    e.op_index = i;
    if (state[i] == State::Done && timing[i].valid) {
      e.start_s = timing[i].start_s;
      e.end_s = timing[i].end_s;
    } else {
      e.start_s = timing[i].valid ? timing[i].start_s : issued_at[i];
      e.end_s = t_end;
      e.failed = true;
    }
    result.events.push_back(e);
  }
  return result;
}

} // namespace twinscale::backend
