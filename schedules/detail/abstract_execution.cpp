// Abstract execution for the deadlock check, under the execution rules
// (schedules/execution_rules.hpp, docs/execution.md: their program index and numbering).
//
// State: per rank, per stream, the next op of that stream; per op, started / done.
// An op starts when it heads its stream (the previous op of the stream is done) and its
// dependencies are done. A compute op is done when it starts. Instance k of a rank's
// collective channel (group kind, priority class) is done once every member of its group
// has started its instance k there; the k-th send from a to b is done once b has
// started its k-th recv from a, and vice versa. Ops only ever become startable/done as others progress
// (monotone), so repeating sweeps until nothing changes reaches the unique maximal
// execution; the schedule is deadlock-free iff every op is done there. A work list
// revisits a rank only when a partner started a communication op it may be waiting for.
//
// Symmetry (tp × dp): when every rank's program depends only on its pp coordinate, any
// permutation of the tp coordinates and of the dp coordinates maps each group to a group
// of the same kind (tp groups to tp groups, …; a send's peer is a pp rank, so a rank's
// partners map to the image's partners) and each rank to a rank running the same
// program. The maximal execution is unique, hence invariant under these permutations:
// all ranks of one pipeline stage end in the same state. So it suffices to execute one
// representative per stage, (tp 0, dp 0, pp p), treating every group member as its
// stage's representative: a tp, dp, ep or edp collective completes once the representative
// itself starts it; a pp, embedding or world collective once the representatives of all
// member stages have. Without symmetry, every rank is executed.
#include "schedules/detail/abstract_execution.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <sstream>

#include "schedules/execution_rules.hpp"

namespace twinscale::schedules::detail {

namespace {

constexpr int kGroupKinds = kGroupKindCount;

struct RankState {
  int64_t rank = 0; // global rank
  const Program* program = nullptr;
  const ProgramIndex* index = nullptr;
  // Ops of a stream complete in order, so the state of a rank is its stream cursors
  // (ops before the cursor are done) and whether each stream's head has started.
  std::array<size_t, kStreamCount> cursor{};
  std::array<bool, kStreamCount> head_started{};
  std::vector<uint32_t> started; // per channel of its program: ops started on it
  // per channel, point-to-point only: the executed partner and its mirror channel
  std::vector<std::pair<size_t, uint16_t>> mirror;
  size_t done = 0;
};

class AbstractExecutor {
public:
  AbstractExecutor(const ExecutionRules& rules, bool by_symmetry)
      : s_(rules.schedule()), L_(s_.layout), sym_(by_symmetry), rules_(rules) {
    const Schedule& s = s_;
    auto add = [&](int64_t r) {
      RankState st;
      st.rank = r;
      st.program = &s.program(r);
      st.index = &rules_.of_rank(r);
      st.started.assign(st.index->channels().size(), 0);
      ranks_.push_back(std::move(st));
    };
    if (sym_)
      for (int64_t p = 0; p < L_.pp; ++p) add(L_.rank({0, 0, p}));
    else
      for (int64_t r = 0; r < L_.world(); ++r) add(r);
    for (RankState& st : ranks_) find_mirrors(st);
    build_groups();
  }

  // Rule 3: the k-th message on a p2p channel meets the k-th on the partner's mirror.
  void find_mirrors(RankState& st) {
    const auto& channels = st.index->channels();
    st.mirror.assign(channels.size(), {0, kNoChannel});
    for (size_t c = 0; c < channels.size(); ++c) {
      const Channel& ch = channels[c];
      if (ch.dir == ChannelDir::Collective) continue;
      const int64_t q = group_member(L_, ch.group, st.rank, ch.peer);
      Channel m = ch;
      m.dir = ch.dir == ChannelDir::Send ? ChannelDir::Recv : ChannelDir::Send;
      m.peer = static_cast<int32_t>(L_.group_rank(ch.group, st.rank));
      const size_t x = index_of(q);
      st.mirror[c] = {x, ranks_[x].index->find_channel(m)};
    }
  }

  // Group instances of the executed ranks: members (as indices of executed ranks) and,
  // per collective instance, how many members have started it. Under symmetry, tp and dp
  // (and ep, edp) groups are trivial (-1): their members are in the representative's own state.
  void build_groups() {
    std::map<std::pair<int, int64_t>, int32_t> id_of; // (kind, first member) → instance
    group_of_.assign(ranks_.size(), {});
    for (size_t i = 0; i < ranks_.size(); ++i) {
      for (int k = 0; k < kGroupKinds; ++k) {
        const auto g = static_cast<GroupKind>(k);
        group_of_[i][k] = -1;
        if (sym_ && (g == GroupKind::Tp || g == GroupKind::Dp || g == GroupKind::Ep || g == GroupKind::ExpertDp ||
                     g == GroupKind::EpNode || g == GroupKind::EpRail))
          continue;
        const int64_t rank = ranks_[i].rank;
        const int64_t leader = g == GroupKind::World ? 0 : L_.group_members(g, rank)[0];
        auto [it, fresh] = id_of.emplace(std::make_pair(k, leader), static_cast<int32_t>(groups_.size()));
        if (fresh) {
          GroupInstance inst;
          std::vector<bool> seen(ranks_.size(), false);
          const auto members = g == GroupKind::World ? std::vector<int64_t>{} : L_.group_members(g, rank);
          auto take = [&](int64_t m) {
            const size_t x = index_of(m);
            if (!seen[x]) inst.members.push_back(x);
            seen[x] = true;
          };
          if (g == GroupKind::World)
            for (int64_t m = 0; m < L_.world(); ++m) take(m);
          else
            for (int64_t m : members) take(m);
          groups_.push_back(std::move(inst));
        }
        group_of_[i][k] = it->second;
      }
    }
  }

  // the executed state standing for global rank r
  RankState& of(int64_t r) {
    return sym_ ? ranks_[static_cast<size_t>(L_.coord(r).pp)] : ranks_[static_cast<size_t>(r)];
  }

  bool complete(RankState& st, uint32_t i) {
    const Op& op = st.program->ops[i];
    if (!op.is_communication()) return true;
    const uint32_t k = st.index->sequence(i);
    const uint16_t c = st.index->channel(i);
    if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
      const auto [x, m] = st.mirror[c];
      return m != kNoChannel && ranks_[x].started[m] > k;
    }
    const int32_t g = group_of_[index_of(st.rank)][static_cast<int>(op.group)];
    if (g < 0) return true;
    const GroupInstance& inst = groups_[static_cast<size_t>(g)];
    const std::vector<uint32_t>* arrived = inst.arrived_of(st.index->channels()[c].priority_class);
    return arrived != nullptr && arrived->size() > k && (*arrived)[k] == inst.members.size();
  }

  const std::vector<int64_t>& members(int64_t rank, GroupKind g) {
    auto key = std::make_pair(rank, g);
    auto it = members_.find(key);
    if (it != members_.end()) return it->second;
    std::vector<int64_t> m = L_.group_members(g, rank);
    if (sym_) { // only distinct representatives matter
      std::vector<int64_t> reps;
      std::vector<bool> seen(static_cast<size_t>(L_.pp), false);
      for (int64_t x : m) {
        const int64_t p = L_.coord(x).pp;
        if (!seen[p]) reps.push_back(L_.rank({0, 0, p}));
        seen[p] = true;
      }
      m = std::move(reps);
    }
    return members_.emplace(key, std::move(m)).first->second;
  }

  static bool is_done(const RankState& st, uint32_t op) {
    return st.index->position(op) < st.cursor[static_cast<int>(st.program->ops[op].stream)];
  }

  bool sweep(RankState& st) {
    bool progress = false;
    for (size_t s = 0; s < kStreamCount; ++s) {
      const auto ops = st.index->stream_ops(s);
      while (st.cursor[s] < ops.size()) {
        const uint32_t i = ops[st.cursor[s]];
        if (!st.head_started[s]) {
          bool ready = true;
          for (uint32_t d : st.program->deps_of(i))
            if (!is_done(st, d)) {
              ready = false;
              break;
            }
          if (!ready) break;
          st.head_started[s] = true;
          progress = true;
          const Op& op = st.program->ops[i];
          if (op.is_communication()) {
            ++st.started[st.index->channel(i)];
            notify_partners(st, i);
          }
        }
        if (!complete(st, i)) break;
        st.head_started[s] = false;
        ++st.done;
        ++st.cursor[s];
        progress = true;
      }
    }
    return progress;
  }

  // Another rank's progress can only change when this rank starts a communication op
  // (completion conditions read start counters), so only its partners are revisited.
  void notify_partners(const RankState& st, uint32_t i) {
    const Op& op = st.program->ops[i];
    const uint16_t c = st.index->channel(i);
    if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
      enqueue(st.mirror[c].first);
      return;
    }
    const int32_t g = group_of_[index_of(st.rank)][static_cast<int>(op.group)];
    if (g < 0) return;
    GroupInstance& inst = groups_[static_cast<size_t>(g)];
    const int32_t cls = st.index->channels()[c].priority_class;
    if (inst.arrived_of(cls) == nullptr) inst.arrived.emplace_back(cls, std::vector<uint32_t>{});
    auto& arrived = *inst.arrived_of(cls);
    const uint32_t k = st.index->sequence(i);
    if (arrived.size() <= k) arrived.resize(k + 1, 0);
    if (++arrived[k] == inst.members.size()) // the last member arrived
      for (size_t m : inst.members) enqueue(m);
  }

  size_t index_of(int64_t rank) const {
    return sym_ ? static_cast<size_t>(L_.coord(rank).pp) : static_cast<size_t>(rank);
  }

  void enqueue(size_t i) {
    if (queued_[i]) return;
    queued_[i] = true;
    queue_.push_back(i);
  }

  void run() {
    queued_.assign(ranks_.size(), false);
    for (size_t i = 0; i < ranks_.size(); ++i) enqueue(i);
    while (!queue_.empty()) {
      const size_t i = queue_.front();
      queue_.pop_front();
      queued_[i] = false;
      while (sweep(ranks_[i])) {}
    }
  }

  std::string waits_for(RankState& st, uint32_t i) {
    const Op& op = st.program->ops[i];
    std::ostringstream os;
    if (!st.head_started[static_cast<int>(op.stream)]) {
      for (uint32_t d : st.program->deps_of(i))
        if (!is_done(st, d)) {
          os << "waits for its dependency op " << d << " (" << s_.names[st.program->ops[d].name] << ", stream "
             << to_string(st.program->ops[d].stream) << ")";
          return os.str();
        }
      return "waits for its stream";
    }
    const uint32_t k = st.index->sequence(i);
    const uint16_t c = st.index->channel(i);
    if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
      const int64_t q = group_member(L_, op.group, st.rank, op.peer);
      os << "waits for rank " << q << " to reach its matching " << (op.kind == OpKind::Send ? "recv" : "send") << " #"
         << k;
      return os.str();
    }
    os << "waits in " << to_string(op.kind) << " #" << k << " on its " << to_string(op.group) << " group for rank(s)";
    for (int64_t m : members(st.rank, op.group)) {
      const RankState& other = of(m);
      const uint16_t mc = other.index->find_channel(st.index->channels()[c]);
      if (mc == kNoChannel || other.started[mc] <= k) os << " " << m;
    }
    return os.str();
  }

  std::vector<Violation> report(size_t max_violations) {
    std::vector<Violation> out;
    for (auto& st : ranks_) {
      if (st.done == st.program->ops.size()) continue;
      if (out.size() >= max_violations) break;
      // the earliest op among the heads of the blocked streams
      uint32_t stuck = UINT32_MAX;
      for (size_t s = 0; s < kStreamCount; ++s)
        if (st.cursor[s] < st.index->stream_ops(s).size())
          stuck = std::min(stuck, st.index->stream_ops(s)[st.cursor[s]]);
      Violation v;
      v.kind = ViolationKind::Deadlock;
      v.rank = st.rank;
      v.op_index = stuck;
      const Op& op = st.program->ops[stuck];
      v.op_name = s_.names[op.name];
      v.labels = describe_labels(op.labels);
      std::ostringstream os;
      os << "stuck at " << to_string(op.kind) << " on stream " << to_string(op.stream) << " after " << st.done << " of "
         << st.program->ops.size() << " ops: " << waits_for(st, stuck);
      if (sym_ && L_.tp * L_.dp > 1) os << " (as are all tp×dp ranks of pipeline stage " << L_.coord(st.rank).pp << ")";
      v.reason = os.str();
      out.push_back(std::move(v));
    }
    return out;
  }

private:
  const Schedule& s_;
  const Layout& L_;
  bool sym_;
  const ExecutionRules& rules_;
  std::vector<RankState> ranks_;
  std::map<std::pair<int64_t, GroupKind>, std::vector<int64_t>> members_;
  struct GroupInstance {
    std::vector<size_t> members; // indices of executed ranks
    // per collective channel (priority class; a few), per instance: members that started it
    std::vector<std::pair<int32_t, std::vector<uint32_t>>> arrived;
    std::vector<uint32_t>* arrived_of(int32_t cls) {
      for (auto& [c, v] : arrived)
        if (c == cls) return &v;
      return nullptr;
    }
    const std::vector<uint32_t>* arrived_of(int32_t cls) const {
      for (const auto& [c, v] : arrived)
        if (c == cls) return &v;
      return nullptr;
    }
  };
  std::vector<GroupInstance> groups_;
  std::vector<std::array<int32_t, kGroupKinds>> group_of_;
  std::deque<size_t> queue_;
  std::vector<bool> queued_;
};

} // namespace

std::vector<Violation> find_deadlocks(const ExecutionRules& rules, bool by_symmetry, size_t max_violations) {
  AbstractExecutor ex(rules, by_symmetry);
  ex.run();
  return ex.report(max_violations);
}

} // namespace twinscale::schedules::detail
