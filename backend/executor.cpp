#include "backend/executor.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include "schedules/error.hpp"
#include "schedules/execution_rules.hpp"
#include "schedules/nccl_order.hpp"

namespace twinscale::backend {

using schedules::GroupKind;
using schedules::Op;
using schedules::OpKind;
using schedules::Schedule;

std::string op_channel(const Schedule& schedule, int64_t rank, const Op& op) {
  return schedules::communicator_of(schedule, rank, op, schedules::kDeviceCommModel);
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

/// One run of one rank's program, in stages: index the program (index), issue what is
/// ready (issue_ready), collect completions (collect), decide whether to stop
/// (should_stop), then report what is still pending (pending_ops) and the trace
/// (trace_events).
class RankRun {
public:
  RankRun(const Schedule& schedule, int64_t rank, Device& device, const ExecutorOptions& options)
      : schedule_(schedule), program_(schedule.program(rank)), rank_(rank), device_(device), options_(options),
        n_(program_.ops.size()) {}

  RankResult run() {
    device_.prepare(schedule_, rank_);
    on_device_ = device_.orders_on_device();
    index();
    result_.rank = rank_;
    result_.ops_total = static_cast<uint32_t>(n_);
    const double t_begin = device_.now_s();
    last_progress_ = last_abort_check_ = t_begin;
    last_publish_ = t_begin - options_.timeout_s;
    last_peer_check_ = t_begin;
    publish(t_begin);
    while (done_count_ < n_ && !failed_) {
      const bool issued = issue_ready();
      const bool completed = collect();
      const double now = device_.now_s();
      if (completed || computing()) {
        last_progress_ = now;
        publish(now);
      }
      if (issued || completed) continue;
      if (should_stop(now)) break;
      device_.wait_for_progress(std::min(options_.idle_wait_s, options_.timeout_s));
    }
    const double t_end = device_.now_s();
    result_.elapsed_s = t_end - t_begin;
    result_.ops_completed = done_count_;
    for (size_t c = 0; c < channel_next_.size(); ++c)
      if (channel_next_[c] > 0) result_.issued[channel_name_[c]] += static_cast<int64_t>(channel_next_[c]);
    result_.status = done_count_ == n_ ? RunStatus::Completed
                     : failed_         ? RunStatus::OpFailed
                     : aborted_        ? RunStatus::Aborted
                                       : RunStatus::TimedOut;
    if (result_.status != RunStatus::Completed) {
      pending_ops(t_end);
      device_.abort(); // once, from here: never inside a device wait
    }
    trace_events(t_end);
    return std::move(result_);
  }

private:
  /// Static structure from the execution rules (schedules/execution_rules.hpp): stream
  /// order, channels and each op's number on its channel; channel names for reports.
  void index() {
    index_ = schedules::ProgramIndex(program_, schedule_.program_of_rank[static_cast<size_t>(rank_)]);
    state_.assign(n_, State::NotIssued);
    issued_at_.assign(n_, 0);
    channel_next_.assign(index_.channels().size(), 0);
    channel_name_.clear();
    for (uint16_t c = 0; c < index_.channels().size(); ++c)
      channel_name_.push_back(op_channel(schedule_, rank_, program_.ops[index_.channel_ops(c)[0]]));
  }

  bool satisfied(uint32_t j) const { return on_device_ ? state_[j] != State::NotIssued : state_[j] == State::Done; }

  bool ready(uint32_t i) {
    const int64_t prev = index_.stream_prev(i);
    if (prev >= 0 && !satisfied(static_cast<uint32_t>(prev))) return false;
    for (uint32_t d : index_.deps(i))
      if (!satisfied(d)) return false;
    const uint16_t c = index_.channel(i); // a channel's ops in program order, on every member
    return c == schedules::kNoChannel || index_.channel_ops(c)[channel_next_[c]] == i;
  }

  void issue(uint32_t i) {
    wait_for_.assign(program_.deps_of(i).begin(), program_.deps_of(i).end());
    const int64_t prev = index_.stream_prev(i);
    if (prev >= 0 && std::find(wait_for_.begin(), wait_for_.end(), static_cast<uint32_t>(prev)) == wait_for_.end())
      wait_for_.push_back(static_cast<uint32_t>(prev));
    device_.issue(i, wait_for_);
    state_[i] = State::Issued;
    issued_at_[i] = device_.now_s();
    if (index_.channel(i) != schedules::kNoChannel) ++channel_next_[index_.channel(i)];
  }

  /// Issues every op that became ready; repeats until a pass issues nothing, because
  /// issuing on one stream can unblock a channel on another. Each pass takes the ready
  /// head of every stream and starts them in the shared order (schedules/
  /// execution_rules.hpp: higher priority first, then program order).
  bool issue_ready() {
    bool any = false;
    std::array<uint32_t, schedules::kStreamCount> heads{};
    for (bool again = true; again;) {
      again = false;
      size_t n = 0;
      for (size_t s = 0; s < schedules::kStreamCount; ++s) {
        const auto list = index_.stream_ops(s);
        if (next_issue_[s] >= list.size() || !ready(list[next_issue_[s]])) continue;
        if (on_device_ && next_issue_[s] - next_done_[s] >= options_.max_in_flight_per_stream) continue;
        heads[n++] = list[next_issue_[s]];
      }
      schedules::order_ready(program_, std::span<uint32_t>(heads.data(), n));
      for (size_t h = 0; h < n; ++h) {
        const auto s = static_cast<size_t>(program_.ops[heads[h]].stream);
        issue(heads[h]); // still ready: a pass only adds readiness
        ++next_issue_[s];
        again = any = true;
      }
    }
    return any;
  }

  /// Streams complete in order: only the oldest outstanding op of each can finish next.
  bool collect() {
    bool any = false;
    for (size_t s = 0; s < schedules::kStreamCount && !failed_; ++s) {
      const auto list = index_.stream_ops(s);
      while (next_done_[s] < next_issue_[s]) {
        const uint32_t i = list[next_done_[s]];
        const OpStatus st = device_.poll(i);
        if (st == OpStatus::Pending) break;
        state_[i] = st == OpStatus::Done ? State::Done : State::Failed;
        ++next_done_[s];
        any = true;
        if (st == OpStatus::Failed) {
          result_.failed_ops.push_back(i);
          failed_ = true;
          break;
        }
        ++done_count_;
      }
    }
    return any;
  }

  /// On devices that issue an op only once it is ready (CPU), an outstanding compute op
  /// is running on the rank's own thread: the rank's compute is advancing.
  bool computing() const {
    if (on_device_) return false;
    for (size_t s = 0; s < schedules::kStreamCount; ++s)
      if (next_done_[s] < next_issue_[s] && !program_.ops[index_.stream_ops(s)[next_done_[s]]].is_communication())
        return true;
    return false;
  }

  void publish(double now) {
    if (!options_.publish_progress || now - last_publish_ < options_.timeout_s / 4) return;
    last_publish_ = now;
    options_.publish_progress(last_progress_);
  }

  /// The latest published progress of the peers this rank's outstanding ops wait on.
  double peers_progress() const {
    double latest = -std::numeric_limits<double>::infinity();
    for (size_t s = 0; s < schedules::kStreamCount; ++s) {
      if (next_done_[s] >= next_issue_[s]) continue;
      const Op& op = program_.ops[index_.stream_ops(s)[next_done_[s]]];
      for (int64_t peer : op_peers(schedule_, rank_, op))
        if (peer != rank_) latest = std::max(latest, options_.peer_progress(peer));
    }
    return latest;
  }

  bool should_stop(double now) {
    if (options_.peer_progress && now - last_peer_check_ >= options_.timeout_s / 4) {
      last_peer_check_ = now;
      last_progress_ = std::max(last_progress_, std::min(now, peers_progress()));
      publish(now);
    }
    if (now - last_progress_ > options_.timeout_s) return true;
    if (options_.should_abort && now - last_abort_check_ > options_.abort_poll_s) {
      last_abort_check_ = now;
      if (options_.should_abort()) {
        aborted_ = true;
        return true;
      }
    }
    return false;
  }

  void pending_ops(double t_end) {
    for (uint32_t i = 0; i < n_; ++i) {
      if (state_[i] != State::Issued) continue;
      const Op& op = program_.ops[i];
      records::WaitingOp p;
      p.op_index = i;
      p.name = op.name < schedule_.names.size() ? schedule_.names[op.name] : "";
      p.kind = op.kind;
      p.group = op.group;
      p.stream = op.stream;
      const uint16_t c = index_.channel(i);
      p.channel = c == schedules::kNoChannel ? std::string() : channel_name_[c];
      p.sequence = c == schedules::kNoChannel ? 0 : index_.sequence(i);
      p.peers = op_peers(schedule_, rank_, op);
      p.waiting_s = t_end - issued_at_[i];
      result_.waiting.push_back(std::move(p));
    }
  }

  /// M18: timings are read back once, after the run.
  void trace_events(double t_end) {
    const std::vector<DeviceOpTiming> timing = device_.timings();
    TWINSCALE_ASSERT(timing.size() == n_, "device returned timings of another program");
    for (uint32_t i = 0; i < n_; ++i) {
      if (state_[i] == State::NotIssued) continue;
      schedules::TraceEvent e;
      e.rank = rank_;
      e.op_index = i;
      if (state_[i] == State::Done && timing[i].valid) {
        e.start_s = timing[i].start_s;
        e.end_s = timing[i].end_s;
      } else {
        // cut off when the run stopped; an op the device started after t_end was read
        // (its streams run on while the rank stops: the CPU device's threads, a GPU)
        // ends where it started, never before
        e.start_s = timing[i].valid ? timing[i].start_s : issued_at_[i];
        e.end_s = std::max(t_end, e.start_s);
        e.failed = true;
      }
      result_.events.push_back(e);
    }
  }

  const Schedule& schedule_;
  const schedules::Program& program_;
  int64_t rank_;
  Device& device_;
  const ExecutorOptions& options_;
  const size_t n_;
  bool on_device_ = false;

  schedules::ProgramIndex index_;         // the execution rules' index of this rank's program
  std::vector<std::string> channel_name_; // per channel of index_: op_channel's name

  std::vector<State> state_;
  std::vector<double> issued_at_;
  std::array<size_t, schedules::kStreamCount> next_issue_{}; // per stream
  std::array<size_t, schedules::kStreamCount> next_done_{};  // per stream: oldest not done
  std::vector<size_t> channel_next_;                         // per channel: ops issued on it
  std::vector<uint32_t> wait_for_;
  RankResult result_;
  uint32_t done_count_ = 0;
  bool failed_ = false, aborted_ = false;
  double last_progress_ = 0, last_abort_check_ = 0, last_publish_ = 0, last_peer_check_ = 0;
};

} // namespace

RankResult Executor::run() { return RankRun(schedule_, rank_, device_, options_).run(); }

} // namespace twinscale::backend
