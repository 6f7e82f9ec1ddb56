#include "sim/detail/executor.hpp"

#include <algorithm>
#include <sstream>

#include "schedules/calibration.hpp"
#include "schedules/error.hpp"
#include "schedules/execution_rules.hpp"
#include "sim/detail/degradation_windows.hpp"

namespace twinscale::sim::detail {

using schedules::GroupKind;
using schedules::Op;
using schedules::OpKind;
using schedules::ScheduleError;
using schedules::Stream;

namespace {

Activity activity_of(const HotOp& h) {
  // the context-parallel ring sits inside the layer like TP's collectives; the MoE
  // all-to-alls are expert-parallel communication of their own
  if (h.group == GroupKind::Cp) return Activity::Tp;
  if (h.cls == HotOp::Send || h.cls == HotOp::Recv) return Activity::Pp;
  if (schedules::is_expert_parallel(h.group)) return Activity::Ep;
  return h.group == GroupKind::Tp ? Activity::Tp : Activity::Dp;
}

/// What a posted receive is while its data has not started to move: a pipeline receive
/// waits for its stage's peer (bubble); a context-parallel ring receive waits for the
/// ring (the ring's own cost, exposed TP+CP communication, as its transfer is).
Activity wait_activity(const HotOp& h) { return h.group == GroupKind::Cp ? Activity::Tp : Activity::RecvWait; }

} // namespace

int32_t SimExecutor::representative_slot(int64_t rank) const {
  if (!symmetric_) return slot_of_rank(stand_in_rank_.empty() ? rank : stand_in_rank_[static_cast<size_t>(rank)]);
  return slot_of_rank(representative_of(schedule_.layout.coord(rank)));
}

int64_t SimExecutor::representative_of(schedules::RankCoord c) const {
  const auto& L = schedule_.layout;
  return L.rank({rep_.tp, rep_.dp / L.cp * L.cp + c.dp % L.cp, c.pp});
}

std::string SimExecutor::op_name(int32_t slot, uint32_t op) const {
  const Op& o = slots_[static_cast<size_t>(slot)].program->ops[op];
  std::string n = o.name < schedule_.names.size() ? schedule_.names[o.name] : std::string(schedules::to_string(o.kind));
  return n;
}

void SimExecutor::start() {
  for (size_t s = 0; s < slots_.size() && !job_failed_; ++s) issue_ready(static_cast<int32_t>(s));
}

std::pair<uint8_t, uint32_t> SimExecutor::first_pending_dep(const Slot& sl, uint32_t op) const {
  const HotOp& h = sl.hot[op];
  const uint32_t* deps = sl.dep_at + h.dep_begin;
  for (uint32_t i = 0; i < h.dep_count; ++i) {
    const uint32_t stream = deps[i] & 7, pos = deps[i] >> 3;
    if (sl.stream_pos[stream] <= pos) return {static_cast<uint8_t>(stream), pos};
  }
  return {kNoWait, 0};
}

/// Issues the head op of every idle stream whose dependencies are done, in the shared
/// start order (schedules/execution_rules.hpp: higher Op::priority first, then program
/// order; the hot records carry each op's priority as its rank within the program, which
/// keeps that order). Readiness only changes when an op completes, so trying every stream
/// after each completion misses nothing; a stream known to wait for a dependency that has
/// not completed is skipped without reading its program.
void SimExecutor::issue_ready(int32_t slot) {
  if (slot == hang_slot_ && backend_->now() >= options_.hang_at_s) return; // the hung rank issues nothing more
  Slot& sl = slots_[static_cast<size_t>(slot)];
  std::array<uint32_t, schedules::kStreamCount> cand{};
  std::array<int32_t, schedules::kStreamCount> prio{};
  size_t nc = 0;
  for (uint32_t idle = sl.streams & ~uint32_t{sl.busy}; idle != 0; idle &= idle - 1) {
    const auto su = static_cast<size_t>(__builtin_ctz(idle));
    if (sl.wait_stream[su] != kNoWait && sl.stream_pos[sl.wait_stream[su]] <= sl.wait_pos[su]) continue;
    const auto ops = sl.index->stream_ops(su);
    const uint32_t pos = sl.stream_pos[su];
    if (pos >= ops.size()) continue;
    const auto [ws, wp] = first_pending_dep(sl, ops[pos]);
    sl.wait_stream[su] = ws;
    sl.wait_pos[su] = wp;
    if (ws != kNoWait) continue;
    const uint32_t op = ops[pos];
    const int32_t p = sl.hot[op].priority;
    size_t i = nc++;
    for (; i > 0 && schedules::starts_before(p, op, prio[i - 1], cand[i - 1]); --i) {
      cand[i] = cand[i - 1];
      prio[i] = prio[i - 1];
    }
    cand[i] = op;
    prio[i] = p;
  }
  for (size_t i = 0; i < nc && !job_failed_; ++i) issue(slot, cand[i]);
}

void SimExecutor::issue(int32_t slot, uint32_t op_index) {
  Slot& sl = slots_[static_cast<size_t>(slot)];
  const HotOp& h = sl.hot[op_index];
  const double now = backend_->now();
  sl.busy = static_cast<uint8_t>(sl.busy | 1u << h.stream);
  sl.stream_start[h.stream] = now;
  if (!sl.timing.empty()) sl.timing[op_index].start_s = now;
  sl.account.touch(now);
  switch (h.cls) {
  case HotOp::Send:
  case HotOp::Recv:
    if (h.cls == HotOp::Recv) sl.account.change(now, wait_activity(h), +1);
    issue_p2p(slot, op_index);
    return;
  case HotOp::Collective: issue_collective(slot, op_index); return;
  default: {
    // The device's hand-off of a ready op (op_issue_gap_s): the stream idles that long
    // before the op starts; the op's own time stays the device model's (a calibrated
    // kernel's measured time), so the traces and the compute account start it after the
    // gap (the activity account counts the gap as compute). The host issues the rank's
    // ops in program order (the job's host time per module call, by precision): a ready op
    // that the host has not reached yet waits for it (the CPU-bound regime).
    double gap = has_issue_gap_ ? sl.issue_gap : 0.0;
    if (sl.host_issue != nullptr) gap = std::max(gap, sl.host_issue[op_index] - now);
    if (gap > 0) {
      sl.stream_start[h.stream] = now + gap;
      if (!sl.timing.empty()) sl.timing[op_index].start_s = now + gap;
    }
    sl.account.change(now, Activity::Compute, +1);
    backend_->start_compute(slot, op_index,
                            h.value / sl.speed + gap + (jitter_s_.empty() ? 0.0 : jitter_s(slot, op_index)));
  }
  }
}

/// Instance `sequence` of the op's channel on its group (execution rule 2) starts once
/// every executed member has reached it; members agree on it (checked when constructed).
void SimExecutor::issue_collective(int32_t slot, uint32_t op_index) {
  Slot& sl = slots_[static_cast<size_t>(slot)];
  const HotOp& op = sl.hot[op_index];
  const auto k = static_cast<size_t>(op.group);
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(op.channel_key)) << 32) | op.sequence;
  GroupState& group = groups_[k][sl.group_id[k]];
  auto it = std::find_if(group.pending.begin(), group.pending.end(), [&](const auto& p) { return p.first == key; });
  if (it == group.pending.end()) {
    uint32_t index = 0;
    if (free_pending_.empty()) {
      index = static_cast<uint32_t>(pending_.size());
      pending_.emplace_back();
    } else {
      index = free_pending_.back();
      free_pending_.pop_back();
    }
    group.pending.emplace_back(key, index);
    it = group.pending.end() - 1;
  }
  const uint32_t pending_index = it->second;
  PendingCollective& pc = pending_[pending_index];
  pc.arrived.push_back({slot, op_index});
  if (!schedules::all_members_reached(pc.arrived.size(), static_cast<size_t>(sl.group_needed[k]))) return;
  group.pending.erase(it);
  CommTask task = collective_task(op, sl.rank, group);
  start_comm(pending_[pending_index].arrived, std::move(task), collective_ctas(sl, op_index, group));
  pending_[pending_index].arrived.clear();
  free_pending_.push_back(pending_index);
}

/// The rank at index `op.peer` of the op's group (no allocation: the hot path).
int64_t SimExecutor::peer_rank(int32_t slot, uint32_t op_index) const {
  const Slot& sl = slots_[static_cast<size_t>(slot)];
  const Op& op = sl.program->ops[op_index];
  return schedules::group_member(schedule_.layout, op.group, sl.rank, op.peer);
}

SimExecutor::PairQueue& SimExecutor::pair_queue(int32_t src_slot, int32_t dst_slot) {
  auto& out = slots_[static_cast<size_t>(src_slot)].out_pairs;
  for (const auto& [dst, q] : out)
    if (dst == dst_slot) return pair_queues_[q];
  out.emplace_back(dst_slot, static_cast<uint32_t>(pair_queues_.size()));
  return pair_queues_.emplace_back();
}

/// The k-th send from a to b on a group meets the k-th receive at b from a there
/// (execution rule 3), whatever order they are posted in; bytes agree (checked when
/// constructed).
void SimExecutor::issue_p2p(int32_t slot, uint32_t op_index) {
  Slot& sl = slots_[static_cast<size_t>(slot)];
  const HotOp& h = sl.hot[op_index];
  const int64_t peer = peer_rank(slot, op_index);
  const int32_t peer_slot = slot_of_rank_[static_cast<size_t>(peer)];
  if (peer_slot < 0)
    throw ScheduleError("rank " + std::to_string(sl.rank) + " op " + std::to_string(op_index) + ": peer rank " +
                        std::to_string(peer) + " is not executed");
  const bool send = h.cls == HotOp::Send;
  const int64_t src = send ? sl.rank : peer, dst = send ? peer : sl.rank;
  PairQueue& q = send ? pair_queue(slot, peer_slot) : pair_queue(peer_slot, slot);
  const uint64_t key = (static_cast<uint64_t>(h.group) << 32) | h.sequence;
  auto& others = send ? q.recvs : q.sends;
  auto match = std::find_if(others.begin(), others.end(), [&](const Posted& x) { return x.key == key; });
  if (match == others.end()) {
    (send ? q.sends : q.recvs).push_back({{slot, op_index}, key});
    return;
  }
  const Participant other = match->p;
  *match = others.back();
  others.pop_back();
  const Participant s = send ? Participant{slot, op_index} : other;
  const Participant r = send ? other : Participant{slot, op_index};
  const double bytes = h.value;
  const bool windows = paths_.windows() != nullptr; // closed forms then depend on the start time
  if (options_.mode == SimMode::Analytic && q.bytes == bytes && !windows) {
    CommTask task;
    task.closed_form_s = q.closed_form_s;
    start_comm(std::array<Participant, 2>{s, r}, std::move(task), options_.channels);
    return;
  }
  CommTask task = p2p_task(src, dst, bytes);
  if (task.closed_form_s >= 0 && !windows) {
    q.bytes = bytes;
    q.closed_form_s = task.closed_form_s;
  }
  start_comm(std::array<Participant, 2>{s, r}, std::move(task), options_.channels);
}

/// Closed forms (analytic mode; collectives inside one server with the shortcuts on)
/// count the load of the group's symmetric images whenever the shortcuts are on: in a
/// symmetric run the images are not executed, in an every-rank run each image is
/// executed and counts the others, which run at once when speeds are equal. Flows are
/// those of the executed group, plus its images' in a symmetric run.
CommTask SimExecutor::collective_task(const HotOp& op, int64_t rank, GroupState& group) const {
  CommTask task;
  const bool analytic = options_.mode == SimMode::Analytic;
  // only closed forms are remembered, and whether the group's are closed never changes
  for (const auto& f : group.forms)
    if (f.kind == static_cast<int>(op.kind) && f.bytes == op.value) {
      task.closed_form_s = f.seconds;
      return task;
    }
  const std::vector<int64_t> members = schedule_.layout.group_members(op.group, rank);
  const auto n = static_cast<int64_t>(members.size());
  if (n <= 1) {
    task.closed_form_s = 0;
    return task;
  }
  const auto& fabric = paths_.fabric();
  if (group.same_server < 0) {
    const int64_t server = fabric.server_of_gpu(gpu_of_rank_[static_cast<size_t>(members[0])]);
    bool same = true;
    for (int64_t m : members) same = same && fabric.server_of_gpu(gpu_of_rank_[static_cast<size_t>(m)]) == server;
    group.same_server = same ? 1 : 0;
  }
  const bool closed = analytic || (shortcuts_ && group.same_server == 1);
  auto remember = [&](double seconds) {
    group.forms[group.next_form] = {static_cast<int>(op.kind), op.value, seconds};
    group.next_form = static_cast<uint8_t>((group.next_form + 1) % group.forms.size());
  };
  if (options_.calibration != nullptr) { // a measured time replaces the model (the lookup rule)
    const auto span = group.same_server == 1 ? schedules::CommSpan::SameHost : schedules::CommSpan::CrossHost;
    if (auto s = options_.calibration->comm_seconds(op.kind, n, op.value, span)) {
      task.closed_form_s = *s;
      remember(task.closed_form_s); // a function of (kind, group size, bytes): safe to reuse
      return task;
    }
  }
  const ClosedFormKey key = closed_form_key(op.kind, op.group, members[0], op.value);
  const DegradationWindows* windows = paths_.windows(); // closed forms depend on the start time
  if (closed && windows == nullptr) {
    if (auto it = closed_form_cache_.find(key); it != closed_form_cache_.end()) {
      task.closed_form_s = it->second;
      remember(task.closed_form_s);
      return task;
    }
    if (prefetch_ != nullptr)
      if (const auto s = prefetch_->take(key)) { // computed on the other core, the same double
        task.closed_form_s = *s;
        closed_form_cache_.emplace(key, *s);
        remember(*s);
        return task;
      }
  }
  const auto gpu_groups =
      image_gpu_groups(schedule_.layout, gpu_of_rank_, op.group, members, closed ? shortcuts_ : symmetric_);
  if (!closed) return collectives_.flow_task(op.kind, op.value, gpu_groups, /*merged=*/shortcuts_);
  if (windows != nullptr) {
    task.closed_form_s = collectives_.closed_form_s(op.kind, op.value, gpu_groups, backend_->now());
    return task;
  }
  task.closed_form_s = collectives_.closed_form_s(op.kind, op.value, gpu_groups);
  closed_form_cache_.emplace(key, task.closed_form_s);
  remember(task.closed_form_s);
  return task;
}

CommTask SimExecutor::p2p_task(int64_t src_rank, int64_t dst_rank, double bytes) const {
  const int64_t src = gpu_of_rank_[static_cast<size_t>(src_rank)];
  const int64_t dst = gpu_of_rank_[static_cast<size_t>(dst_rank)];
  CommTask task;
  if (options_.calibration != nullptr && src != dst) {
    const auto& fabric = paths_.fabric();
    const auto span = fabric.server_of_gpu(src) == fabric.server_of_gpu(dst) ? schedules::CommSpan::SameHost
                                                                             : schedules::CommSpan::CrossHost;
    if (auto s = options_.calibration->comm_seconds(OpKind::Send, 2, bytes, span)) {
      task.closed_form_s = *s;
      return task;
    }
  }
  if (options_.mode == SimMode::Analytic || src == dst) {
    const DegradationWindows* windows = paths_.windows();
    task.closed_form_s = src == dst           ? 0.0
                         : windows != nullptr ? windows->p2p_s(src, dst, bytes, options_.channels, backend_->now())
                                              : paths_.p2p_s(src, dst, bytes, options_.channels);
    return task;
  }
  const auto channels = static_cast<uint32_t>(options_.channels);
  for (uint32_t c = 0; c < channels; ++c) task.flows.push_back({src, dst, c, bytes / channels, 0, -1});
  return task;
}

void SimExecutor::start_comm(std::span<const Participant> participants, CommTask task, int32_t ctas) {
  uint32_t id = 0;
  if (free_comms_.empty()) {
    id = static_cast<uint32_t>(comms_.size());
    comms_.emplace_back();
    comm_ctas_.push_back(0);
  } else {
    id = free_comms_.back();
    free_comms_.pop_back();
  }
  const double now = backend_->now();
  for (const Participant& p : participants) {
    Slot& sl = slots_[static_cast<size_t>(p.slot)];
    const HotOp& h = sl.hot[p.op];
    if (!sl.timing.empty()) sl.timing[p.op].transfer_s = now;
    if (h.cls == HotOp::Recv) sl.account.change(now, wait_activity(h), -1);
    sl.account.change(now, activity_of(h), +1);
    sl.comm_ctas += ctas;
    backend_->set_comm_ctas(p.slot, sl.comm_ctas);
  }
  comms_[id].assign(participants.begin(), participants.end());
  comm_ctas_[id] = ctas;
  backend_->start_comm(id, std::move(task));
}

void SimExecutor::on_compute_done(int32_t slot, uint32_t op) { complete_op(slot, op, false); }

void SimExecutor::prefetch(int32_t slot) const {
  const char* p = reinterpret_cast<const char*>(&slots_[static_cast<size_t>(slot)]);
  for (size_t line = 0; line < 4; ++line) __builtin_prefetch(p + 64 * line);
}

/// Releases every participant of the instance at once (one event per instance).
void SimExecutor::on_comm_done(uint32_t comm_id, bool failed, double stalled_s) {
  std::vector<Participant> parts = std::move(comms_[comm_id]);
  comms_[comm_id].clear();
  for (const Participant& p : parts) prefetch(p.slot);
  for (const Participant& p : parts) {
    Slot& sl = slots_[static_cast<size_t>(p.slot)];
    sl.comm_ctas -= comm_ctas_[comm_id];
    backend_->set_comm_ctas(p.slot, sl.comm_ctas);
    if (failed || stalled_s > 0) {
      incidents_.push_back({sl.rank, p.op, op_name(p.slot, p.op), failed, backend_->now(), stalled_s});
    }
  }
  if (failed && !job_failed_) {
    const Participant& p = parts.front();
    fail_job("rank " + std::to_string(slots_[static_cast<size_t>(p.slot)].rank) + " op " + std::to_string(p.op) + " (" +
             op_name(p.slot, p.op) + ") failed: a flow exceeded the retransmit limit");
  }
  for (const Participant& p : parts) complete_op(p.slot, p.op, failed);
  parts.clear();
  comms_[comm_id] = std::move(parts); // keeps its capacity for the next instance
  free_comms_.push_back(comm_id);
}

void SimExecutor::fail_job(const std::string& why) {
  if (job_failed_) return;
  job_failed_ = true;
  failure_ = why;
  failure_time_s_ = backend_->now();
}

void SimExecutor::on_job_fault(const std::string& why) { fail_job(why); }

void SimExecutor::complete_op(int32_t slot, uint32_t op_index, bool failed) {
  Slot& sl = slots_[static_cast<size_t>(slot)];
  const double now = backend_->now();
  const HotOp& h = sl.hot[op_index];
  const size_t st = h.stream;
  if (!sl.timing.empty()) {
    OpTiming& t = sl.timing[op_index];
    t.end_s = now;
    t.failed = failed;
  }
  if (trace_sink_ != nullptr) [[unlikely]]
    trace_sink_->record(sl.rank, op_index, sl.stream_start[st], now, failed);
  if (h.cls >= HotOp::Send) {
    sl.account.change(now, activity_of(h), -1);
  } else {
    sl.account.change(now, Activity::Compute, -1);
    if (h.cls != HotOp::ComputeOther) sl.account.add_compute(h.cls == HotOp::ComputeForward, now - sl.stream_start[st]);
  }
  sl.account.touch(now);
  last_end_s_ = std::max(last_end_s_, now);
  ++ops_done_;
  if (progress_ && (ops_done_ & 0xfff) == 0) progress_->update(ops_done_);
  sl.busy = static_cast<uint8_t>(sl.busy & ~(1u << st));
  ++sl.stream_pos[st];
  if (job_failed_) return;
  issue_ready(slot);
}

void SimExecutor::set_trace_sink(schedules::BinaryTraceWriter* sink) {
  trace_sink_ = sink;
  if (sink == nullptr) return;
  // a run by classes: every other rank has its counterpart's events (written once)
  for (size_t r = 0; r < stand_in_rank_.size(); ++r)
    if (stand_in_rank_[r] != static_cast<int64_t>(r)) sink->same_events_as(static_cast<int64_t>(r), stand_in_rank_[r]);
}

void SimExecutor::finish(double horizon_s) {
  for (Slot& sl : slots_) sl.account.finish(horizon_s);
  if (progress_) {
    progress_->update(ops_done_); // the final count (updates come every 4096 ops)
    progress_->finish();
  }
}

void SimExecutor::check_finished() const {
  if (job_failed_ || ops_done_ == ops_total_ || hang_slot_ >= 0) return;
  std::ostringstream os;
  os << "deadlock: " << (ops_total_ - ops_done_) << " ops never ran;";
  int shown = 0;
  for (size_t s = 0; s < slots_.size() && shown < 4; ++s) {
    const Slot& sl = slots_[s];
    for (int st = 0; st < schedules::kStreamCount && shown < 4; ++st) {
      const auto ops = sl.index->stream_ops(static_cast<size_t>(st));
      const uint32_t pos = sl.stream_pos[static_cast<size_t>(st)];
      if (pos >= ops.size()) continue;
      const uint32_t op = ops[pos];
      const Op& o = sl.program->ops[op];
      os << " rank " << sl.rank << " stream " << schedules::to_string(static_cast<Stream>(st)) << " waits at op " << op
         << " (" << op_name(static_cast<int32_t>(s), op) << ", " << schedules::to_string(o.kind) << "): ";
      int waiting = 0;
      for (uint32_t d : sl.program->deps_of(op))
        if (sl.stream_pos[sl.hot[d].stream] <= sl.hot[d].pos_in_stream) ++waiting;
      if (waiting > 0)
        os << waiting << " dependencies not done;";
      else if (o.kind == OpKind::Send || o.kind == OpKind::Recv)
        os << "no matching " << (o.kind == OpKind::Send ? "recv" : "send") << " posted;";
      else if (o.is_collective())
        os << "not every member of its " << schedules::to_string(o.group) << " group reached it;";
      else
        os << "never completed;";
      ++shown;
    }
  }
  throw ScheduleError(os.str());
}

} // namespace twinscale::sim::detail
