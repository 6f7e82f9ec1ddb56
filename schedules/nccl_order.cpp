// The NCCL-order check: an abstract execution of every rank with zero-time ops.
//
// An op starts when it heads its stream (the previous op of the stream is done), its
// dependencies are done and, for a communication op, it heads its communicator's queue
// on this rank: every op issued earlier on that communicator is done (NCCL serialises a
// communicator's kernels in issue order). A compute op is done when it starts; the k-th
// op of a communicator's collective queue is done once every member started its k-th;
// the j-th send from A to B on a communicator is done once B started its j-th receive
// from A there, and vice versa (a rendezvous: the conservative reading, as large
// messages behave). Every condition is monotone, so sweeping until nothing changes
// reaches the unique maximal execution; the schedule and issue order are deadlock-free
// iff every op is done there.
#include "schedules/nccl_order.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <sstream>
#include <tuple>

#include "schedules/error.hpp"

namespace twinscale::schedules {

std::string communicator_of(const Schedule& schedule, int64_t rank, const Op& op, const CommModel& model) {
  if (!op.is_communication()) return {};
  std::string group(to_string(op.group));
  if (op.is_collective()) {
    if (model.dp_by_priority && op.group == GroupKind::Dp && op.priority != 0)
      group += "@p" + std::to_string(op.priority);
    return group;
  }
  if (!model.directed_p2p) return group;
  const auto members = schedule.layout.group_members(op.group, rank);
  TWINSCALE_ASSERT(op.peer >= 0 && op.peer < static_cast<int32_t>(members.size()), "p2p peer outside its group");
  return (op.kind == OpKind::Send ? "send:" : "recv:") + group + ":" +
         std::to_string(members[static_cast<size_t>(op.peer)]);
}

namespace {

enum class OpState : uint8_t { NotStarted, Started, Done };

struct Instance {                                  // one communicator (a set of members)
  std::string name;                                // "tp{0,1}", "pp:0>1", …
  std::vector<int64_t> members;                    // global ranks
  std::vector<uint32_t> arrived;                   // collectives: per position, members that started it
  std::vector<std::pair<int64_t, uint32_t>> first; // per position: (rank, op) of the first arrival
  bool mismatch_reported = false;
};

struct RankState {
  int64_t rank = 0;
  const Program* program = nullptr;
  std::vector<OpState> state;
  std::vector<uint32_t> issue_pos; // op → position in the issue order
  std::array<std::vector<uint32_t>, kStreamCount> stream_ops;
  std::array<size_t, kStreamCount> stream_cursor{};
  std::vector<int32_t> instance;            // op → communicator instance (-1)
  std::vector<uint32_t> ordinal;            // op → position in its instance's queue
                                            // (p2p: among the same direction)
  std::vector<int32_t> local;               // op → index of its queue here (-1)
  std::vector<int64_t> peer;                // p2p op → the peer's global rank
  std::vector<uint32_t> match;              // p2p op → the peer's matching op
  std::map<int32_t, int32_t> local_of;      // instance → index of its queue here
  std::vector<std::vector<uint32_t>> queue; // per local queue: ops in issue order
  std::vector<size_t> queue_cursor;         // per local queue: first op not done
  size_t done = 0;
};

class NcclOrderRun {
public:
  NcclOrderRun(const Schedule& s, const CommModel& model, const IssueOrder& issue_order, size_t max_violations)
      : s_(s), L_(s.layout), model_(model), max_(max_violations) {
    ranks_.resize(static_cast<size_t>(L_.world()));
    for (int64_t r = 0; r < L_.world(); ++r) setup(ranks_[static_cast<size_t>(r)], r, issue_order);
    // The k-th send from A to B on a communicator meets B's k-th receive from A there.
    for (const auto& [key, sends] : p2p_ops_) {
      const auto& [inst, src, dst, dir] = key;
      if (dir != 1) continue;
      const auto it = p2p_ops_.find({inst, src, dst, 2});
      if (it == p2p_ops_.end()) continue;
      const auto& recvs = it->second;
      for (size_t k = 0; k < std::min(sends.size(), recvs.size()); ++k) {
        ranks_[static_cast<size_t>(src)].match[sends[k]] = recvs[k];
        ranks_[static_cast<size_t>(dst)].match[recvs[k]] = sends[k];
      }
    }
  }

  std::vector<Violation> run() {
    std::vector<bool> queued(ranks_.size(), true);
    for (size_t i = 0; i < ranks_.size(); ++i) work_.push_back(i);
    queued_ = std::move(queued);
    while (!work_.empty()) {
      const size_t i = work_.front();
      work_.pop_front();
      queued_[i] = false;
      while (sweep(ranks_[i])) {}
    }
    for (RankState& st : ranks_)
      if (st.done < st.program->ops.size() && out_.size() < max_) report(st);
    return std::move(out_);
  }

private:
  void setup(RankState& st, int64_t r, const IssueOrder& issue_order) {
    st.rank = r;
    st.program = &s_.program(r);
    const size_t n = st.program->ops.size();
    std::vector<uint32_t> order = issue_order ? issue_order(r) : std::vector<uint32_t>{};
    if (order.empty())
      for (uint32_t i = 0; i < n; ++i) order.push_back(i);
    TWINSCALE_ASSERT(order.size() == n, "issue order is not a permutation of the program");
    st.state.assign(n, OpState::NotStarted);
    st.issue_pos.assign(n, UINT32_MAX);
    for (uint32_t k = 0; k < n; ++k) {
      TWINSCALE_ASSERT(order[k] < n && st.issue_pos[order[k]] == UINT32_MAX, "issue order repeats an op");
      st.issue_pos[order[k]] = k;
    }
    for (uint32_t i = 0; i < n; ++i) st.stream_ops[static_cast<size_t>(st.program->ops[i].stream)].push_back(i);
    st.instance.assign(n, -1);
    st.ordinal.assign(n, 0);
    st.local.assign(n, -1);
    st.peer.assign(n, -1);
    st.match.assign(n, UINT32_MAX);
    std::map<std::pair<int32_t, int>, uint32_t> counts; // (instance, kind) → ops so far
    for (uint32_t i : order) {
      const Op& op = st.program->ops[i];
      if (!op.is_communication()) continue;
      const int32_t inst = instance_of(r, op);
      st.instance[i] = inst;
      auto [lq, fresh] = st.local_of.emplace(inst, static_cast<int32_t>(st.queue.size()));
      if (fresh) {
        st.queue.emplace_back();
        st.queue_cursor.push_back(0);
      }
      st.local[i] = lq->second;
      st.queue[static_cast<size_t>(lq->second)].push_back(i);
      const int dir = op.kind == OpKind::Send ? 1 : op.kind == OpKind::Recv ? 2 : 0;
      st.ordinal[i] = counts[{inst, dir}]++;
      if (dir != 0) {
        st.peer[i] = peer_of(r, op);
        p2p_ops_[{inst, dir == 1 ? r : st.peer[i], dir == 1 ? st.peer[i] : r, dir}].push_back(i);
      }
    }
  }

  int64_t peer_of(int64_t r, const Op& op) const { return L_.group_members(op.group, r)[static_cast<size_t>(op.peer)]; }

  int32_t instance_of(int64_t r, const Op& op) {
    std::vector<int64_t> members;
    std::string name;
    if (!op.is_collective() && model_.directed_p2p) {
      const int64_t q = peer_of(r, op);
      const int64_t src = op.kind == OpKind::Send ? r : q, dst = op.kind == OpKind::Send ? q : r;
      members = {src, dst};
      name = std::string(to_string(op.group)) + ":" + std::to_string(src) + ">" + std::to_string(dst);
    } else {
      if (op.group == GroupKind::World)
        for (int64_t m = 0; m < L_.world(); ++m) members.push_back(m);
      else
        members = L_.group_members(op.group, r);
      std::string ch = communicator_of(s_, r, op, model_);
      name = ch + "{";
      for (size_t k = 0; k < members.size(); ++k) name += (k ? "," : "") + std::to_string(members[k]);
      name += "}";
    }
    auto [it, fresh] = ids_.emplace(name, static_cast<int32_t>(instances_.size()));
    if (fresh) instances_.push_back(Instance{name, std::move(members), {}, {}, false});
    return it->second;
  }

  bool done(const RankState& st, uint32_t i) const { return st.state[i] == OpState::Done; }

  bool can_start(const RankState& st, uint32_t i) const {
    for (uint32_t d : st.program->deps_of(i))
      if (!done(st, d)) return false;
    const int32_t lq = st.local[i];
    return lq < 0 || st.queue[static_cast<size_t>(lq)][st.queue_cursor[static_cast<size_t>(lq)]] == i;
  }

  /// Why op i (a stream head) cannot start, or "" when it can.
  std::string start_blocker(const RankState& st, uint32_t i) const {
    for (uint32_t d : st.program->deps_of(i))
      if (!done(st, d)) return "waits for its dependency op " + std::to_string(d) + " (" + name(st, d) + ")";
    const int32_t inst = st.instance[i];
    if (inst < 0) return {};
    const uint32_t head = queue_head(st, i);
    if (head == i) return {};
    return "NCCL runs the kernels of communicator " + instances_[inst].name + " in issue order, and op " +
           std::to_string(head) + " (" + name(st, head) + ", " + std::string(to_string(st.program->ops[head].kind)) +
           ") was issued on it before and has not completed";
  }

  uint32_t queue_head(const RankState& st, uint32_t i) const {
    const auto lq = static_cast<size_t>(st.local[i]);
    return st.queue[lq][st.queue_cursor[lq]];
  }

  bool can_complete(const RankState& st, uint32_t i) const {
    const Op& op = st.program->ops[i];
    if (!op.is_communication()) return true;
    const int32_t inst = st.instance[i];
    const uint32_t k = st.ordinal[i];
    if (op.is_collective()) {
      const Instance& in = instances_[inst];
      return in.arrived.size() > k && in.arrived[k] == in.members.size();
    }
    const uint32_t j = st.match[i];
    return j != UINT32_MAX && ranks_[static_cast<size_t>(st.peer[i])].state[j] != OpState::NotStarted;
  }

  void start(RankState& st, uint32_t i) {
    st.state[i] = OpState::Started;
    const Op& op = st.program->ops[i];
    if (!op.is_communication()) return;
    const int32_t inst = st.instance[i];
    Instance& in = instances_[inst];
    const uint32_t k = st.ordinal[i];
    if (op.is_collective()) {
      if (in.arrived.size() <= k) {
        in.arrived.resize(k + 1, 0);
        in.first.resize(k + 1, {-1, 0});
      }
      if (in.first[k].first < 0)
        in.first[k] = {st.rank, i};
      else
        check_match(in, k, st, i);
      if (++in.arrived[k] == in.members.size())
        for (int64_t m : in.members) enqueue(static_cast<size_t>(m));
      return;
    }
    enqueue(static_cast<size_t>(st.peer[i]));
  }

  void check_match(Instance& in, uint32_t k, const RankState& st, uint32_t i) {
    const auto [r0, i0] = in.first[k];
    const Op& a = s_.program(r0).ops[i0];
    const Op& b = st.program->ops[i];
    if ((a.kind == b.kind && a.bytes == b.bytes) || in.mismatch_reported) return;
    in.mismatch_reported = true;
    std::ostringstream os;
    os << "collective #" << k << " on communicator " << in.name << " is " << to_string(b.kind) << " of " << b.bytes
       << " bytes, but rank " << r0 << " issues " << to_string(a.kind) << " of " << a.bytes << " bytes there (its op "
       << i0 << " " << name(ranks_[static_cast<size_t>(r0)], i0) << ")";
    add(ViolationKind::CollectiveMismatch, st, i, os.str());
  }

  bool sweep(RankState& st) {
    bool progress = false;
    for (size_t s = 0; s < kStreamCount; ++s) {
      const auto& ops = st.stream_ops[s];
      while (st.stream_cursor[s] < ops.size()) {
        const uint32_t i = ops[st.stream_cursor[s]];
        if (st.state[i] == OpState::NotStarted) {
          if (!can_start(st, i)) break;
          start(st, i);
          progress = true;
        }
        if (!can_complete(st, i)) break;
        st.state[i] = OpState::Done;
        ++st.done;
        ++st.stream_cursor[s];
        if (st.local[i] >= 0) ++st.queue_cursor[static_cast<size_t>(st.local[i])];
        progress = true;
      }
    }
    return progress;
  }

  void enqueue(size_t r) {
    if (queued_[r]) return;
    queued_[r] = true;
    work_.push_back(r);
  }

  std::string name(const RankState& st, uint32_t i) const {
    const Op& op = st.program->ops[i];
    return (op.name < s_.names.size() ? s_.names[op.name] : "?") + "; " + describe_labels(op.labels);
  }

  /// What a started communication op waits for, naming the peers and their ops.
  std::string peer_wait(const RankState& st, uint32_t i) const {
    const Op& op = st.program->ops[i];
    const int32_t inst = st.instance[i];
    const uint32_t k = st.ordinal[i];
    std::ostringstream os;
    if (op.is_collective()) {
      os << "waits in " << to_string(op.kind) << " #" << k << " on communicator " << instances_[inst].name
         << " for rank(s)";
      for (int64_t m : instances_[inst].members) {
        const RankState& other = ranks_[static_cast<size_t>(m)];
        const auto it = other.local_of.find(inst);
        if (it == other.local_of.end()) continue;
        const auto& q = other.queue[static_cast<size_t>(it->second)];
        if (q.size() <= k) continue;
        if (other.state[q[k]] == OpState::NotStarted)
          os << " " << m << " (its op " << q[k] << ": " << start_blocker(other, q[k]) << ")";
      }
      return os.str();
    }
    const int64_t q = peer_of(st.rank, op);
    const bool send = op.kind == OpKind::Send;
    os << "waits for rank " << q << " to start its matching " << (send ? "recv" : "send") << " #" << k
       << " on communicator " << instances_[inst].name;
    const auto it = p2p_ops_.find({inst, send ? st.rank : q, send ? q : st.rank, send ? 2 : 1});
    if (it != p2p_ops_.end() && it->second.size() > k) {
      const RankState& other = ranks_[static_cast<size_t>(q)];
      const uint32_t j = it->second[k];
      os << ", its op " << j << " (" << name(other, j) << ")";
      if (other.state[j] == OpState::NotStarted) {
        const std::string why = start_blocker(other, j);
        os << ", which " << (why.empty() ? "waits for its stream" : why);
      }
    }
    return os.str();
  }

  void report(const RankState& st) {
    // The stuck stream heads; prefer the one an NCCL rule blocks, then the earliest issued.
    uint32_t best = UINT32_MAX;
    int best_rank = 3;
    for (size_t s = 0; s < kStreamCount; ++s) {
      if (st.stream_cursor[s] >= st.stream_ops[s].size()) continue;
      const uint32_t i = st.stream_ops[s][st.stream_cursor[s]];
      const std::string why = st.state[i] == OpState::NotStarted ? start_blocker(st, i) : "";
      const int r = why.rfind("NCCL", 0) == 0 ? 0 : st.state[i] == OpState::Started ? 1 : 2;
      if (r < best_rank || (r == best_rank && st.issue_pos[i] < st.issue_pos[best])) {
        best = i;
        best_rank = r;
      }
    }
    TWINSCALE_ASSERT(best != UINT32_MAX, "a stuck rank without a stuck stream");
    const Op& op = st.program->ops[best];
    std::ostringstream os;
    os << "stuck at " << to_string(op.kind) << " on stream " << to_string(op.stream) << " after " << st.done << " of "
       << st.program->ops.size() << " ops: ";
    if (st.state[best] == OpState::Started)
      os << peer_wait(st, best);
    else {
      os << start_blocker(st, best);
      const int32_t inst = st.instance[best];
      if (inst >= 0) {
        const uint32_t head = queue_head(st, best);
        if (head != best && st.state[head] == OpState::Started) os << "; op " << head << " " << peer_wait(st, head);
      }
    }
    add(ViolationKind::NcclOrder, st, best, os.str());
  }

  void add(ViolationKind kind, const RankState& st, uint32_t i, std::string reason) {
    if (out_.size() >= max_) return;
    Violation v;
    v.kind = kind;
    v.rank = st.rank;
    v.op_index = i;
    const Op& op = st.program->ops[i];
    v.op_name = op.name < s_.names.size() ? s_.names[op.name] : "?";
    v.labels = describe_labels(op.labels);
    v.reason = std::move(reason);
    out_.push_back(std::move(v));
  }

  const Schedule& s_;
  const Layout& L_;
  CommModel model_;
  size_t max_;
  std::vector<RankState> ranks_;
  std::vector<Instance> instances_;
  std::map<std::string, int32_t> ids_;
  // (instance, src, dst, 1 send / 2 recv) → ops in issue order
  std::map<std::tuple<int32_t, int64_t, int64_t, int>, std::vector<uint32_t>> p2p_ops_;
  std::deque<size_t> work_;
  std::vector<bool> queued_;
  std::vector<Violation> out_;
};

} // namespace

std::vector<Violation> check_nccl_order(const Schedule& schedule, const CommModel& model, const IssueOrder& issue_order,
                                        size_t max_violations) {
  return NcclOrderRun(schedule, model, issue_order, max_violations).run();
}

} // namespace twinscale::schedules
