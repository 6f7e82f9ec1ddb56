// What the abstract execution (abstract_execution.cpp) says about the ranks it leaves
// stuck: the op each is stuck on and what it waits for, under the stream semantics
// (Deadlock) or under NCCL's communicator queues (NcclOrder, naming the communicator and
// the earlier op of it, or the peer, that holds the rank).
#include <algorithm>
#include <sstream>

#include "schedules/detail/abstract_executor.hpp"
#include "schedules/error.hpp"

namespace twinscale::schedules::detail {

std::string AbstractExecutor::name(const RankRun& st, uint32_t op) const {
  const Op& o = st.program->ops[op];
  return (o.name < s_.names.size() ? s_.names[o.name] : "?") + "; " + describe_labels(o.labels);
}

Violation AbstractExecutor::violation(ViolationKind kind, const RankRun& st, uint32_t op, std::string reason) const {
  Violation v;
  v.kind = kind;
  v.rank = st.rank;
  v.op_index = op;
  const Op& o = st.program->ops[op];
  v.op_name = o.name < s_.names.size() ? s_.names[o.name] : "?";
  v.labels = describe_labels(o.labels);
  v.reason = std::move(reason);
  return v;
}

void AbstractExecutor::check_match(Comm& comm, uint32_t k, const RankRun& st, uint32_t op) {
  const auto [r0, i0] = comm.first[k];
  const Op& a = s_.program(r0).ops[i0];
  const Op& b = st.program->ops[op];
  if ((a.kind == b.kind && a.bytes == b.bytes) || comm.mismatch_reported) return;
  comm.mismatch_reported = true;
  if (mismatches_.size() >= max_mismatches_) return;
  std::ostringstream os;
  os << "collective #" << k << " on communicator " << comm.name << " is " << to_string(b.kind) << " of " << b.bytes
     << " bytes, but rank " << r0 << " issues " << to_string(a.kind) << " of " << a.bytes << " bytes there (its op "
     << i0 << " " << name(state_of(r0), i0) << ")";
  mismatches_.push_back(violation(ViolationKind::CollectiveMismatch, st, op, os.str()));
}

// ---- under the stream semantics ------------------------------------------------------

/// The members of `rank`'s group of kind `group` a report names: under symmetry, one
/// representative per member stage.
std::vector<int64_t> AbstractExecutor::stage_members(int64_t rank, GroupKind group) const {
  std::vector<int64_t> m = L_.group_members(group, rank);
  if (!report_sym_) return m;
  std::vector<int64_t> reps;
  std::vector<bool> seen(static_cast<size_t>(L_.pp), false);
  for (int64_t x : m) {
    const int64_t p = L_.coord(x).pp;
    if (!seen[static_cast<size_t>(p)]) reps.push_back(L_.rank({0, 0, p}));
    seen[static_cast<size_t>(p)] = true;
  }
  return reps;
}

std::string AbstractExecutor::waits_for(const RankRun& st, uint32_t op) const {
  const Op& o = st.program->ops[op];
  std::ostringstream os;
  if (!st.head_started[static_cast<size_t>(o.stream)]) {
    for (uint32_t d : st.program->deps_of(op))
      if (!is_done(st, d)) {
        os << "waits for its dependency op " << d << " (" << s_.names[st.program->ops[d].name] << ", stream "
           << to_string(st.program->ops[d].stream) << ")";
        return os.str();
      }
    return "waits for its stream";
  }
  const uint32_t k = number(st, op);
  const uint16_t c = st.index->channel(op);
  if (o.kind == OpKind::Send || o.kind == OpKind::Recv) {
    const int64_t q = group_member(L_, o.group, st.rank, o.peer);
    os << "waits for rank " << q << " to reach its matching " << (o.kind == OpKind::Send ? "recv" : "send") << " #"
       << k;
    return os.str();
  }
  os << "waits in " << to_string(o.kind) << " #" << k << " on its " << to_string(o.group) << " group for rank(s)";
  for (int64_t m : stage_members(st.rank, o.group)) {
    const RankRun& other = state_of(m);
    const uint16_t mc = other.index->find_channel(st.index->channels()[c]);
    if (mc == kNoChannel || other.started[mc] <= k) os << " " << m;
  }
  return os.str();
}

std::vector<Violation> AbstractExecutor::deadlock_report(size_t max_violations) const {
  std::vector<Violation> out;
  for (const RankRun& st : ranks_) {
    if (st.done == st.program->ops.size()) continue;
    if (report_sym_ && !exec_sym_ && (L_.coord(st.rank).tp != 0 || L_.coord(st.rank).dp != 0)) continue;
    if (out.size() >= max_violations) break;
    // the earliest op among the heads of the blocked streams
    uint32_t stuck = UINT32_MAX;
    for (size_t s = 0; s < kStreamCount; ++s)
      if (st.cursor[s] < st.index->stream_ops(s).size()) stuck = std::min(stuck, st.index->stream_ops(s)[st.cursor[s]]);
    const Op& o = st.program->ops[stuck];
    std::ostringstream os;
    os << "stuck at " << to_string(o.kind) << " on stream " << to_string(o.stream) << " after " << st.done << " of "
       << st.program->ops.size() << " ops: " << waits_for(st, stuck);
    if (report_sym_ && L_.tp * L_.dp > 1)
      os << " (as are all tp×dp ranks of pipeline stage " << L_.coord(st.rank).pp << ")";
    Violation v = violation(ViolationKind::Deadlock, st, stuck, os.str());
    v.op_name = s_.names[o.name];
    out.push_back(std::move(v));
  }
  return out;
}

// ---- under the communicator queues ---------------------------------------------------

/// Why op `op` (a stream head) cannot start, or "" when it can.
std::string AbstractExecutor::start_blocker(const RankRun& st, uint32_t op) const {
  for (uint32_t d : st.program->deps_of(op))
    if (!is_done(st, d)) return "waits for its dependency op " + std::to_string(d) + " (" + name(st, d) + ")";
  const uint16_t c = st.index->channel(op);
  if (c == kNoChannel) return {};
  const uint32_t head = queue_head(st, op);
  if (head == op) return {};
  return "NCCL runs the kernels of communicator " + comms_[static_cast<size_t>(st.comm[c])].name +
         " in issue order, and op " + std::to_string(head) + " (" + name(st, head) + ", " +
         std::string(to_string(st.program->ops[head].kind)) + ") was issued on it before and has not completed";
}

/// What a started communication op waits for, naming the peers and their ops.
std::string AbstractExecutor::peer_wait(const RankRun& st, uint32_t op) const {
  const Op& o = st.program->ops[op];
  const uint16_t c = st.index->channel(op);
  const int32_t id = st.comm[c];
  const Comm& comm = comms_[static_cast<size_t>(id)];
  const uint32_t k = st.queue_number[op];
  std::ostringstream os;
  if (o.is_collective()) {
    os << "waits in " << to_string(o.kind) << " #" << k << " on communicator " << comm.name << " for rank(s)";
    for (int64_t m : comm.member_ranks) {
      const RankRun& other = state_of(m);
      const auto it = other.queue_of_comm.find(id);
      if (it == other.queue_of_comm.end()) continue;
      const auto& q = other.queue[static_cast<size_t>(it->second)];
      if (q.size() <= k) continue;
      if (phase(other, q[k]) == OpPhase::NotStarted)
        os << " " << m << " (its op " << q[k] << ": " << start_blocker(other, q[k]) << ")";
    }
    return os.str();
  }
  const int64_t q = group_member(L_, o.group, st.rank, o.peer);
  os << "waits for rank " << q << " to start its matching " << (o.kind == OpKind::Send ? "recv" : "send") << " #" << k
     << " on communicator " << comm.name;
  const auto [x, m] = st.mirror[c];
  if (m != kNoChannel && ranks_[x].issued[m].size() > k) {
    const RankRun& other = ranks_[x];
    const uint32_t j = other.issued[m][k];
    os << ", its op " << j << " (" << name(other, j) << ")";
    if (phase(other, j) == OpPhase::NotStarted) {
      const std::string why = start_blocker(other, j);
      os << ", which " << (why.empty() ? "waits for its stream" : why);
    }
  }
  return os.str();
}

/// The stuck stream head a report names (the one an NCCL rule blocks, then a started
/// one, then the earliest issued) and why it is stuck.
Violation AbstractExecutor::stuck_in_queue(const RankRun& st) const {
  uint32_t best = UINT32_MAX;
  int best_rank = 3;
  for (size_t s = 0; s < kStreamCount; ++s) {
    if (st.cursor[s] >= st.index->stream_ops(s).size()) continue;
    const uint32_t i = st.index->stream_ops(s)[st.cursor[s]];
    const OpPhase ph = phase(st, i);
    const std::string why = ph == OpPhase::NotStarted ? start_blocker(st, i) : "";
    const int r = why.rfind("NCCL", 0) == 0 ? 0 : ph == OpPhase::Started ? 1 : 2;
    if (r < best_rank || (r == best_rank && st.issue_pos[i] < st.issue_pos[best])) {
      best = i;
      best_rank = r;
    }
  }
  TWINSCALE_ASSERT(best != UINT32_MAX, "a stuck rank without a stuck stream");
  const Op& o = st.program->ops[best];
  std::ostringstream os;
  os << "stuck at " << to_string(o.kind) << " on stream " << to_string(o.stream) << " after " << st.done << " of "
     << st.program->ops.size() << " ops: ";
  if (phase(st, best) == OpPhase::Started) {
    os << peer_wait(st, best);
  } else {
    os << start_blocker(st, best);
    if (st.index->channel(best) != kNoChannel) {
      const uint32_t head = queue_head(st, best);
      if (head != best && phase(st, head) == OpPhase::Started) os << "; op " << head << " " << peer_wait(st, head);
    }
  }
  return violation(ViolationKind::NcclOrder, st, best, os.str());
}

std::vector<Violation> AbstractExecutor::queue_report(size_t max_violations) const {
  std::vector<Violation> out;
  for (const RankRun& st : ranks_)
    if (st.done < st.program->ops.size() && out.size() < max_violations) out.push_back(stuck_in_queue(st));
  return out;
}

} // namespace twinscale::schedules::detail
