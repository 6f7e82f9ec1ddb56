#include "sim/detail/executor.hpp"

#include <algorithm>
#include <sstream>

#include "schedules/error.hpp"
#include "schedules/calibration.hpp"

namespace twinscale::sim::detail {

using schedules::GroupKind;
using schedules::Op;
using schedules::OpKind;
using schedules::ScheduleError;
using schedules::Stream;

namespace {

ProgramIndex index_program(const schedules::Program& p, size_t program_id) {
  ProgramIndex idx;
  std::vector<uint32_t> count(p.ops.size() + 1, 0);
  for (uint32_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    const auto s = static_cast<size_t>(op.stream);
    if (s >= static_cast<size_t>(schedules::kStreamCount))
      throw ScheduleError("program " + std::to_string(program_id) + " op " + std::to_string(i) +
                          ": stream " + std::to_string(s) + " out of range");
    idx.stream_ops[s].push_back(i);
    if (static_cast<size_t>(op.dep_begin) + op.dep_count > p.deps.size())
      throw ScheduleError("program " + std::to_string(program_id) + " op " + std::to_string(i) +
                          ": dependency range past the end of deps");
    for (uint32_t d : p.deps_of(op)) {
      if (d >= i)
        throw ScheduleError("program " + std::to_string(program_id) + " op " + std::to_string(i) +
                            ": depends on op " + std::to_string(d) +
                            " which is not earlier in the program");
      ++count[d];
    }
  }
  idx.dependents_begin.assign(p.ops.size() + 1, 0);
  for (size_t i = 0; i < p.ops.size(); ++i) idx.dependents_begin[i + 1] = idx.dependents_begin[i] + count[i];
  idx.dependents.resize(idx.dependents_begin.back());
  std::vector<uint32_t> fill(idx.dependents_begin.begin(), idx.dependents_begin.end() - 1);
  for (uint32_t i = 0; i < p.ops.size(); ++i)
    for (uint32_t d : p.deps_of(p.ops[i])) idx.dependents[fill[d]++] = i;
  return idx;
}

bool is_p2p(const Op& op) { return op.kind == OpKind::Send || op.kind == OpKind::Recv; }

} // namespace

Executor::Executor(const schedules::Schedule& schedule, const std::vector<int64_t>& gpu_of_rank,
                   const SimOptions& options, const DeviceModel& device, const NetworkPaths& paths,
                   bool aggregate, schedules::RankCoord representative)
    : schedule_(schedule), gpu_of_rank_(gpu_of_rank), options_(options), device_(device), paths_(paths),
      collectives_(paths, options), rep_(representative) {
  const auto& L = schedule_.layout;
  const int64_t world = L.world();
  if (static_cast<int64_t>(schedule_.program_of_rank.size()) != world)
    throw ScheduleError("schedule: program_of_rank has " + std::to_string(schedule_.program_of_rank.size()) +
                        " entries, the layout has " + std::to_string(world) + " ranks");
  if (static_cast<int64_t>(gpu_of_rank_.size()) != world)
    throw ScheduleError("placement: " + std::to_string(gpu_of_rank_.size()) + " GPUs given for " +
                        std::to_string(world) + " ranks");
  for (int64_t r = 0; r < world; ++r) {
    const int64_t g = gpu_of_rank_[static_cast<size_t>(r)];
    if (g < 0 || g >= paths_.fabric().gpus())
      throw ScheduleError("placement: rank " + std::to_string(r) + " on GPU " + std::to_string(g) +
                          ", the fabric has GPUs 0.." + std::to_string(paths_.fabric().gpus() - 1));
    if (schedule_.program_of_rank[static_cast<size_t>(r)] >= schedule_.programs.size())
      throw ScheduleError("schedule: rank " + std::to_string(r) + " names program " +
                          std::to_string(schedule_.program_of_rank[static_cast<size_t>(r)]) + " of " +
                          std::to_string(schedule_.programs.size()));
  }
  for (size_t p = 0; p < schedule_.programs.size(); ++p) program_index_.push_back(index_program(schedule_.programs[p], p));

  // Symmetry holds when every rank of a stage runs its stage's program and p2p only
  // travels along pipelines (so the executed ranks only ever talk to executed ranks).
  aggregated_ = aggregate;
  for (int64_t r = 0; aggregated_ && r < world; ++r) {
    const auto c = L.coord(r);
    if (schedule_.program_of_rank[static_cast<size_t>(r)] != schedule_.program_of_rank[static_cast<size_t>(L.rank({rep_.tp, rep_.dp, c.pp}))])
      aggregated_ = false;
  }
  for (size_t p = 0; aggregated_ && p < schedule_.programs.size(); ++p)
    for (const Op& op : schedule_.programs[p].ops)
      if (is_p2p(op) && op.group != GroupKind::Pp && op.group != GroupKind::Embedding) aggregated_ = false;

  slot_of_rank_.assign(static_cast<size_t>(world), -1);
  if (aggregated_) {
    for (int64_t pp = 0; pp < L.pp; ++pp) slot_rank_.push_back(L.rank({rep_.tp, rep_.dp, pp}));
  } else {
    for (int64_t r = 0; r < world; ++r) slot_rank_.push_back(r);
  }
  slots_.resize(slot_rank_.size());
  for (size_t s = 0; s < slot_rank_.size(); ++s) {
    Slot& sl = slots_[s];
    sl.rank = slot_rank_[s];
    slot_of_rank_[static_cast<size_t>(sl.rank)] = static_cast<int32_t>(s);
    const uint32_t pid = schedule_.program_of_rank[static_cast<size_t>(sl.rank)];
    sl.program = &schedule_.programs[pid];
    sl.index = &program_index_[pid];
    sl.deps_left.resize(sl.program->ops.size());
    for (size_t i = 0; i < sl.program->ops.size(); ++i) sl.deps_left[i] = sl.program->ops[i].dep_count;
    sl.timing.resize(sl.program->ops.size());
    ops_total_ += static_cast<int64_t>(sl.program->ops.size());
    slot_gpu_.push_back(gpu_of_rank_[static_cast<size_t>(sl.rank)]);
  }
}

int32_t Executor::representative_slot(int64_t rank) const {
  if (!aggregated_) return slot_of_rank(rank);
  const auto c = schedule_.layout.coord(rank);
  return slot_of_rank(schedule_.layout.rank({rep_.tp, rep_.dp, c.pp}));
}

std::string Executor::op_name(int32_t slot, uint32_t op) const {
  const Op& o = slots_[static_cast<size_t>(slot)].program->ops[op];
  std::string n = o.name < schedule_.names.size() ? schedule_.names[o.name] : std::string(schedules::to_string(o.kind));
  return n;
}

void Executor::start() {
  for (size_t s = 0; s < slots_.size(); ++s) {
    std::array<int, schedules::kStreamCount> order{};
    for (int i = 0; i < schedules::kStreamCount; ++i) order[static_cast<size_t>(i)] = i;
    const Slot& sl = slots_[s];
    auto prio = [&](int st) {
      const auto& ops = sl.index->stream_ops[static_cast<size_t>(st)];
      return ops.empty() ? INT32_MIN : sl.program->ops[ops[0]].priority;
    };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return prio(a) > prio(b); });
    for (int st : order) try_issue(static_cast<int32_t>(s), st);
  }
}

void Executor::try_issue(int32_t slot, int stream) {
  Slot& sl = slots_[static_cast<size_t>(slot)];
  const auto st = static_cast<size_t>(stream);
  if (job_failed_ || sl.stream_busy[st]) return;
  const auto& ops = sl.index->stream_ops[st];
  if (sl.stream_pos[st] >= ops.size()) return;
  const uint32_t op = ops[sl.stream_pos[st]];
  if (sl.deps_left[op] > 0) return;
  issue(slot, op);
}

void Executor::issue(int32_t slot, uint32_t op_index) {
  Slot& sl = slots_[static_cast<size_t>(slot)];
  const Op& op = sl.program->ops[op_index];
  sl.stream_busy[static_cast<size_t>(op.stream)] = true;
  sl.timing[op_index].start_s = backend_->now();
  if (!op.is_communication()) {
    backend_->start_compute(slot, op_index, device_.seconds(op));
  } else if (is_p2p(op)) {
    issue_p2p(slot, op_index);
  } else {
    issue_collective(slot, op_index);
  }
}

void Executor::issue_collective(int32_t slot, uint32_t op_index) {
  Slot& sl = slots_[static_cast<size_t>(slot)];
  const Op& op = sl.program->ops[op_index];
  const auto& L = schedule_.layout;
  const std::vector<int64_t> members = L.group_members(op.group, sl.rank);
  const uint32_t seq = sl.group_seq[static_cast<size_t>(op.group)]++;
  auto key = std::make_tuple(static_cast<int>(op.group), members.front(), seq);
  PendingCollective& pc = pending_collectives_[key];
  if (pc.arrived.empty()) {
    for (int64_t m : members)
      if (slot_of_rank_[static_cast<size_t>(m)] >= 0) ++pc.needed;
  } else {
    const Participant& first = pc.arrived.front();
    const Op& f = slots_[static_cast<size_t>(first.slot)].program->ops[first.op];
    if (f.kind != op.kind || f.bytes != op.bytes)
      throw ScheduleError("collective mismatch in " + std::string(schedules::to_string(op.group)) +
                          " group " + std::to_string(seq) + ": rank " + std::to_string(slots_[static_cast<size_t>(first.slot)].rank) +
                          " op " + std::to_string(first.op) + " is " + std::string(schedules::to_string(f.kind)) +
                          " of " + std::to_string(f.bytes) + " bytes, rank " + std::to_string(sl.rank) + " op " +
                          std::to_string(op_index) + " is " + std::string(schedules::to_string(op.kind)) + " of " +
                          std::to_string(op.bytes) + " bytes (members must issue the same collectives in the same order)");
  }
  pc.arrived.push_back({slot, op_index});
  if (pc.arrived.size() < pc.needed) return;
  std::vector<Participant> parts = std::move(pc.arrived);
  pending_collectives_.erase(key);
  CommTask task = collective_task(slot, op, members);
  start_comm(std::move(parts), std::move(task));
}

void Executor::issue_p2p(int32_t slot, uint32_t op_index) {
  Slot& sl = slots_[static_cast<size_t>(slot)];
  const Op& op = sl.program->ops[op_index];
  const auto members = schedule_.layout.group_members(op.group, sl.rank);
  if (op.peer < 0 || static_cast<size_t>(op.peer) >= members.size())
    throw ScheduleError("rank " + std::to_string(sl.rank) + " op " + std::to_string(op_index) + " (" +
                        op_name(slot, op_index) + "): peer " + std::to_string(op.peer) + " outside its " +
                        std::string(schedules::to_string(op.group)) + " group of " + std::to_string(members.size()));
  const int64_t peer = members[static_cast<size_t>(op.peer)];
  if (slot_of_rank_[static_cast<size_t>(peer)] < 0)
    throw ScheduleError("rank " + std::to_string(sl.rank) + " op " + std::to_string(op_index) +
                        ": peer rank " + std::to_string(peer) + " is not executed");
  const bool send = op.kind == OpKind::Send;
  const auto key = send ? std::make_pair(sl.rank, peer) : std::make_pair(peer, sl.rank);
  PairQueue& q = pending_p2p_[key];
  (send ? q.sends : q.recvs).push_back({slot, op_index});
  if (q.sends.empty() || q.recvs.empty()) return;
  const Participant s = q.sends.front(), r = q.recvs.front();
  q.sends.pop_front();
  q.recvs.pop_front();
  const Op& so = slots_[static_cast<size_t>(s.slot)].program->ops[s.op];
  const Op& ro = slots_[static_cast<size_t>(r.slot)].program->ops[r.op];
  if (so.bytes != ro.bytes)
    throw ScheduleError("send rank " + std::to_string(key.first) + " op " + std::to_string(s.op) + " (" +
                        std::to_string(so.bytes) + " bytes) matches recv rank " + std::to_string(key.second) +
                        " op " + std::to_string(r.op) + " (" + std::to_string(ro.bytes) +
                        " bytes): a send and its receive must carry equal bytes");
  if (q.sends.empty() && q.recvs.empty()) pending_p2p_.erase(key);
  start_comm({s, r}, p2p_task(key.first, key.second, so.bytes));
}

std::vector<std::vector<int64_t>> Executor::image_groups(GroupKind kind, const std::vector<int64_t>& members) const {
  std::vector<std::vector<int64_t>> out;
  if (!aggregated_ || kind == GroupKind::World || kind == GroupKind::Tp) {
    out.push_back(members);
    return out;
  }
  const auto& L = schedule_.layout;
  const int64_t tp_shifts = L.tp;
  const int64_t dp_shifts = kind == GroupKind::Dp ? 1 : L.dp;
  for (int64_t ds = 0; ds < dp_shifts; ++ds) {
    for (int64_t ts = 0; ts < tp_shifts; ++ts) {
      std::vector<int64_t> g;
      g.reserve(members.size());
      for (int64_t m : members) {
        const auto c = L.coord(m);
        g.push_back(L.rank({(c.tp + ts) % L.tp, (c.dp + ds) % L.dp, c.pp}));
      }
      out.push_back(std::move(g));
    }
  }
  return out;
}

CommTask Executor::collective_task(int32_t, const Op& op, const std::vector<int64_t>& members) const {
  const auto n = static_cast<int64_t>(members.size());
  CommTask task;
  if (n <= 1) {
    task.closed_form_s = 0;
    return task;
  }
  const auto& fabric = paths_.fabric();
  const int64_t server = fabric.server_of_gpu(gpu_of_rank_[static_cast<size_t>(members[0])]);
  bool same_server = true;
  for (int64_t m : members) same_server = same_server && fabric.server_of_gpu(gpu_of_rank_[static_cast<size_t>(m)]) == server;
  const bool closed = options_.mode == SimMode::Analytic || (aggregated_ && same_server);
  if (closed && options_.calibration != nullptr) {
    if (auto busbw = options_.calibration->busbw_bytes_per_s(op.kind, n, op.bytes); busbw && *busbw > 0) {
      task.closed_form_s = op.bytes * schedules::bus_factor(op.kind, n) / *busbw;
      return task;
    }
  }
  const auto key = std::make_tuple(static_cast<int>(op.kind), static_cast<int>(op.group), members[0], op.bytes);
  if (closed) {
    if (auto it = closed_form_cache_.find(key); it != closed_form_cache_.end()) {
      task.closed_form_s = it->second;
      return task;
    }
  }
  std::vector<std::vector<int64_t>> gpu_groups;
  for (const auto& g : image_groups(op.group, members)) {
    std::vector<int64_t> gpus;
    for (int64_t m : g) gpus.push_back(gpu_of_rank_[static_cast<size_t>(m)]);
    gpu_groups.push_back(std::move(gpus));
  }
  if (!closed) return collectives_.flow_task(op.kind, op.bytes, gpu_groups, aggregated_);
  task.closed_form_s = collectives_.closed_form_s(op.kind, op.bytes, gpu_groups);
  closed_form_cache_.emplace(key, task.closed_form_s);
  return task;
}

CommTask Executor::p2p_task(int64_t src_rank, int64_t dst_rank, double bytes) const {
  const int64_t src = gpu_of_rank_[static_cast<size_t>(src_rank)];
  const int64_t dst = gpu_of_rank_[static_cast<size_t>(dst_rank)];
  CommTask task;
  if (options_.mode == SimMode::Analytic || src == dst) {
    task.closed_form_s = src == dst ? 0.0 : paths_.p2p_s(src, dst, bytes, options_.channels);
    return task;
  }
  const auto channels = static_cast<uint32_t>(options_.channels);
  for (uint32_t c = 0; c < channels; ++c) task.flows.push_back({src, dst, c, bytes / channels, 0, -1});
  return task;
}

void Executor::start_comm(std::vector<Participant> participants, CommTask task) {
  const auto id = static_cast<uint32_t>(comms_.size());
  const double now = backend_->now();
  for (const Participant& p : participants) {
    Slot& sl = slots_[static_cast<size_t>(p.slot)];
    sl.timing[p.op].transfer_s = now;
    if (sl.active_comms++ == 0) backend_->set_comm_active(p.slot, true);
  }
  comms_.push_back({std::move(participants)});
  backend_->start_comm(id, std::move(task));
}

void Executor::on_compute_done(int32_t slot, uint32_t op) { complete_op(slot, op, false); }

void Executor::on_comm_done(uint32_t comm_id, bool failed, double stalled_s) {
  const std::vector<Participant> parts = std::move(comms_[comm_id].participants);
  for (const Participant& p : parts) {
    Slot& sl = slots_[static_cast<size_t>(p.slot)];
    if (--sl.active_comms == 0) backend_->set_comm_active(p.slot, false);
    if (failed || stalled_s > 0) {
      incidents_.push_back({sl.rank, p.op, op_name(p.slot, p.op), failed, backend_->now(), stalled_s});
    }
  }
  if (failed && !job_failed_) {
    const Participant& p = parts.front();
    fail_job("rank " + std::to_string(slots_[static_cast<size_t>(p.slot)].rank) + " op " + std::to_string(p.op) +
             " (" + op_name(p.slot, p.op) + ") failed: a flow exceeded the retransmit limit");
  }
  for (const Participant& p : parts) complete_op(p.slot, p.op, failed);
}

void Executor::fail_job(const std::string& why) {
  if (job_failed_) return;
  job_failed_ = true;
  failure_ = why;
  failure_time_s_ = backend_->now();
}

void Executor::on_job_fault(const std::string& why) { fail_job(why); }

void Executor::complete_op(int32_t slot, uint32_t op_index, bool failed) {
  Slot& sl = slots_[static_cast<size_t>(slot)];
  OpTiming& t = sl.timing[op_index];
  t.end_s = backend_->now();
  t.failed = failed;
  ++ops_done_;
  const Op& op = sl.program->ops[op_index];
  const auto st = static_cast<size_t>(op.stream);
  sl.stream_busy[st] = false;
  ++sl.stream_pos[st];
  if (job_failed_) return;
  uint32_t mask = 1u << st;
  const auto& idx = *sl.index;
  for (uint32_t i = idx.dependents_begin[op_index]; i < idx.dependents_begin[op_index + 1]; ++i) {
    const uint32_t d = idx.dependents[i];
    if (--sl.deps_left[d] == 0) mask |= 1u << static_cast<uint32_t>(sl.program->ops[d].stream);
  }
  // Issue in priority order among the streams that may have become ready.
  std::array<int, schedules::kStreamCount> cand{};
  int nc = 0;
  for (int s = 0; s < schedules::kStreamCount; ++s)
    if (mask & (1u << s)) cand[static_cast<size_t>(nc++)] = s;
  auto prio = [&](int s) {
    const auto& ops = idx.stream_ops[static_cast<size_t>(s)];
    const uint32_t pos = sl.stream_pos[static_cast<size_t>(s)];
    return pos < ops.size() ? sl.program->ops[ops[pos]].priority : INT32_MIN;
  };
  std::stable_sort(cand.begin(), cand.begin() + nc, [&](int a, int b) { return prio(a) > prio(b); });
  for (int i = 0; i < nc; ++i) try_issue(slot, cand[static_cast<size_t>(i)]);
}

void Executor::check_finished() const {
  if (job_failed_ || ops_done_ == ops_total_) return;
  std::ostringstream os;
  os << "deadlock: " << (ops_total_ - ops_done_) << " ops never ran;";
  int shown = 0;
  for (size_t s = 0; s < slots_.size() && shown < 4; ++s) {
    const Slot& sl = slots_[s];
    for (int st = 0; st < schedules::kStreamCount && shown < 4; ++st) {
      const auto& ops = sl.index->stream_ops[static_cast<size_t>(st)];
      const uint32_t pos = sl.stream_pos[static_cast<size_t>(st)];
      if (pos >= ops.size()) continue;
      const uint32_t op = ops[pos];
      const Op& o = sl.program->ops[op];
      os << " rank " << sl.rank << " stream " << schedules::to_string(static_cast<Stream>(st)) << " waits at op " << op
         << " (" << op_name(static_cast<int32_t>(s), op) << ", " << schedules::to_string(o.kind) << "): ";
      if (sl.deps_left[op] > 0) os << sl.deps_left[op] << " dependencies not done;";
      else if (o.kind == OpKind::Send || o.kind == OpKind::Recv) os << "no matching " << (o.kind == OpKind::Send ? "recv" : "send") << " posted;";
      else if (o.is_collective()) os << "not every member of its " << schedules::to_string(o.group) << " group reached it;";
      else os << "never completed;";
      ++shown;
    }
  }
  throw ScheduleError(os.str());
}

} // namespace twinscale::sim::detail
