// The abstract execution: every rank's program run with zero-time ops under the
// execution rules (schedules/execution_rules.hpp, docs/execution.md: their program
// index, numbering and rendezvous), optionally with NCCL's communicator queues on top.
//
// State: per rank, per stream, the next op of that stream; per op, started / done.
// An op starts when it heads its stream (the previous op of the stream is done) and its
// dependencies are done; with communicator queues (ExecutionModel::comm_queues) a
// communication op must also head its communicator's queue on its rank: every op issued
// earlier on that communicator is done (NCCL serialises a communicator's kernels in
// issue order, on every member, whatever CUDA stream they were issued on). A compute op
// is done when it starts. Instance k of a collective channel (communicator) is done once
// every member has started its instance k there; the k-th send from a to b is done once
// b has started its k-th recv from a, and vice versa (a rendezvous: the conservative
// reading, as large messages behave). Ops only ever become startable or done as others
// progress (monotone), so repeating sweeps until nothing changes reaches the unique
// maximal execution; the schedule (and issue order) is deadlock-free iff every op is
// done there. A work list revisits a rank only when a partner started a communication
// op it may be waiting for.
//
// One execution tells the two kinds of stuck apart: the queues only add start
// conditions, so every step taken under them is a step of the stream semantics too.
// Lifting the queues at the fixpoint and executing on therefore reaches the maximal
// execution of the stream semantics: ranks stuck there deadlock under the streams alone;
// ranks stuck only before are stuck by NCCL's order.
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
// member stages have. Without symmetry, or with communicator queues (whose report names
// every rank), every rank is executed; the deadlock report then still names one
// representative per stage when asked to.
#include "schedules/detail/abstract_execution.hpp"

#include <numeric>

#include "schedules/detail/abstract_executor.hpp"
#include "schedules/error.hpp"
#include "schedules/execution_rules.hpp"

namespace twinscale::schedules::detail {

namespace {

/// Groups whose members all sit on one pipeline stage (trivial under symmetry).
bool stage_local(GroupKind g) {
  return g == GroupKind::Tp || g == GroupKind::Dp || g == GroupKind::Ep || g == GroupKind::ExpertDp ||
         g == GroupKind::EpNode || g == GroupKind::EpRail;
}

} // namespace

AbstractExecutor::AbstractExecutor(const ExecutionRules& rules, const ExecutionModel& model, size_t max_mismatches)
    : s_(rules.schedule()), L_(s_.layout), model_(model), report_sym_(model.by_symmetry),
      exec_sym_(model.by_symmetry && !model.comm_queues), queues_(model.comm_queues), numbered_(model.comm_queues),
      max_mismatches_(max_mismatches) {
  if (exec_sym_)
    for (int64_t p = 0; p < L_.pp; ++p) add_rank(L_.rank({0, 0, p}));
  else
    for (int64_t r = 0; r < L_.world(); ++r) add_rank(r);
  for (RankRun& st : ranks_) {
    st.index = &rules.of_rank(st.rank);
    st.started.assign(st.index->channels().size(), 0);
  }
  for (RankRun& st : ranks_) find_mirrors(st);
  for (RankRun& st : ranks_) {
    const auto& channels = st.index->channels();
    st.comm.assign(channels.size(), -1);
    for (size_t c = 0; c < channels.size(); ++c) {
      const Channel& ch = channels[c];
      if (!queues_ && (ch.dir != ChannelDir::Collective || (exec_sym_ && stage_local(ch.group)))) continue;
      st.comm[c] = comm_of(st.rank, ch);
    }
    if (queues_) build_queues(st);
  }
}

void AbstractExecutor::add_rank(int64_t rank) {
  RankRun st;
  st.rank = rank;
  st.program = &s_.program(rank);
  ranks_.push_back(std::move(st));
}

// Rule 3: the k-th message on a p2p channel meets the k-th on the partner's mirror.
void AbstractExecutor::find_mirrors(RankRun& st) {
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

/// The communicator a channel of `rank` runs on under the model (without queues: the
/// devices' model, whose communicators are the channels): a collective channel's group
/// (dp split by priority class), a directed pair, or a group shared by all its messages.
int32_t AbstractExecutor::comm_of(int64_t rank, const Channel& ch) {
  const CommModel& cm = queues_ ? model_.comms : kDeviceCommModel;
  std::string label(to_string(ch.group));
  int64_t leader = 0;
  std::vector<int64_t> members;
  const bool directed = ch.dir != ChannelDir::Collective && cm.directed_p2p;
  if (directed) {
    const int64_t q = group_member(L_, ch.group, rank, ch.peer);
    const bool send = ch.dir == ChannelDir::Send;
    leader = send ? rank : q;
    members = {leader, send ? q : rank};
    label += ":" + std::to_string(members[0]) + ">" + std::to_string(members[1]);
  } else {
    if (ch.dir == ChannelDir::Collective && cm.dp_by_priority && ch.group == GroupKind::Dp && ch.priority_class != 0)
      label += "@p" + std::to_string(ch.priority_class);
    leader = ch.group == GroupKind::World ? 0 : group_member(L_, ch.group, rank, 0);
  }
  auto [it, fresh] = comm_ids_.emplace(std::make_pair(label, leader), static_cast<int32_t>(comms_.size()));
  if (!fresh) return it->second;
  Comm comm;
  if (directed) {
    comm.name = label;
  } else {
    if (ch.group == GroupKind::World) {
      members.resize(static_cast<size_t>(L_.world()));
      std::iota(members.begin(), members.end(), int64_t{0});
    } else {
      members = L_.group_members(ch.group, rank);
    }
    comm.name = label + "{";
    for (size_t k = 0; k < members.size(); ++k) comm.name += (k ? "," : "") + std::to_string(members[k]);
    comm.name += "}";
  }
  std::vector<bool> seen(ranks_.size(), false);
  for (int64_t m : members) {
    const size_t x = index_of(m);
    if (!seen[x]) comm.members.push_back(x);
    seen[x] = true;
  }
  comm.member_ranks = std::move(members);
  comms_.push_back(std::move(comm));
  return it->second;
}

/// The queues of a rank's communicators, in the model's issue order, and the numbers of
/// its communication ops in that order (execution_rules.hpp: number_in_issue_order).
void AbstractExecutor::build_queues(RankRun& st) {
  const size_t n = st.program->ops.size();
  std::vector<uint32_t> order = model_.issue_order ? model_.issue_order(st.rank) : std::vector<uint32_t>{};
  if (order.empty()) {
    order.resize(n);
    std::iota(order.begin(), order.end(), uint32_t{0});
  }
  const auto& channels = st.index->channels();
  st.queue_of.assign(channels.size(), -1);
  for (size_t c = 0; c < channels.size(); ++c) {
    auto [it, fresh] = st.queue_of_comm.emplace(st.comm[c], static_cast<int32_t>(st.queue.size()));
    if (fresh) {
      st.queue.emplace_back();
      st.queue_cursor.push_back(0);
    }
    st.queue_of[c] = it->second;
  }
  // Collectives count per communicator; a message both per channel (its match) and per
  // communicator and direction (as NCCL's queue sees it, for the reports).
  std::vector<uint32_t> match_class(channels.size()), queue_class(channels.size());
  for (size_t c = 0; c < channels.size(); ++c) {
    const auto q = static_cast<uint32_t>(st.queue_of[c]);
    const auto dir = static_cast<uint32_t>(channels[c].dir);
    queue_class[c] = 3 * q + dir;
    match_class[c] = dir == 0 ? 3 * q : static_cast<uint32_t>(3 * st.queue.size() + c);
  }
  st.number = number_in_issue_order(*st.index, order, match_class);
  st.queue_number = number_in_issue_order(*st.index, order, queue_class);
  st.issue_pos.assign(n, 0);
  st.issued.assign(channels.size(), {});
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t i = order[k];
    st.issue_pos[i] = k;
    const uint16_t c = st.index->channel(i);
    if (c == kNoChannel) continue;
    st.queue[static_cast<size_t>(st.queue_of[c])].push_back(i);
    st.issued[c].push_back(i);
  }
}

size_t AbstractExecutor::index_of(int64_t rank) const {
  return exec_sym_ ? static_cast<size_t>(L_.coord(rank).pp) : static_cast<size_t>(rank);
}

uint32_t AbstractExecutor::number(const RankRun& st, uint32_t op) const {
  return numbered_ ? st.number[op] : st.index->sequence(op);
}

OpPhase AbstractExecutor::phase(const RankRun& st, uint32_t op) const {
  const auto s = static_cast<size_t>(st.program->ops[op].stream);
  const uint32_t pos = st.index->position(op);
  if (pos < st.cursor[s]) return OpPhase::Done;
  return pos == st.cursor[s] && st.head_started[s] ? OpPhase::Started : OpPhase::NotStarted;
}

uint32_t AbstractExecutor::queue_head(const RankRun& st, uint32_t op) const {
  const auto q = static_cast<size_t>(st.queue_of[st.index->channel(op)]);
  return st.queue[q][st.queue_cursor[q]];
}

// (the hot loop: `c` is the op's channel, kNoChannel for compute)
inline bool AbstractExecutor::can_start(const RankRun& st, uint32_t op, uint16_t c) const {
  for (uint32_t d : st.program->deps_of(op))
    if (!is_done(st, d)) return false;
  return !queues_ || c == kNoChannel || queue_head(st, op) == op;
}

inline bool AbstractExecutor::complete(const RankRun& st, uint32_t op, uint16_t c) const {
  if (c == kNoChannel) return true;
  const uint32_t k = number(st, op);
  if (st.index->channels()[c].dir != ChannelDir::Collective) {
    const auto [x, m] = st.mirror[c];
    return m != kNoChannel && ranks_[x].started[m] > k;
  }
  if (st.comm[c] < 0) return true; // a stage-local group under symmetry
  const Comm& comm = comms_[static_cast<size_t>(st.comm[c])];
  return comm.arrived.size() > k && all_members_reached(comm.arrived[k], comm.members.size());
}

// Another rank's progress can only change when this rank starts a communication op
// (completion conditions read start counters), so only its partners are revisited.
void AbstractExecutor::arrive(RankRun& st, uint32_t op, uint16_t c) {
  ++st.started[c];
  if (st.index->channels()[c].dir != ChannelDir::Collective) {
    enqueue(st.mirror[c].first);
    return;
  }
  if (st.comm[c] < 0) return;
  Comm& comm = comms_[static_cast<size_t>(st.comm[c])];
  const uint32_t k = number(st, op);
  if (comm.arrived.size() <= k) comm.arrived.resize(k + 1, 0);
  if (queues_) {
    if (comm.first.size() <= k) comm.first.resize(k + 1, {-1, 0});
    if (comm.first[k].first < 0)
      comm.first[k] = {st.rank, op};
    else
      check_match(comm, k, st, op);
  }
  if (all_members_reached(++comm.arrived[k], comm.members.size())) // the last member arrived
    for (size_t m : comm.members) enqueue(m);
}

bool AbstractExecutor::sweep(RankRun& st) {
  bool progress = false;
  for (size_t s = 0; s < kStreamCount; ++s) {
    const auto ops = st.index->stream_ops(s);
    while (st.cursor[s] < ops.size()) {
      const uint32_t i = ops[st.cursor[s]];
      const uint16_t c = st.index->channel(i);
      if (!st.head_started[s]) {
        if (!can_start(st, i, c)) break;
        st.head_started[s] = true;
        progress = true;
        if (c != kNoChannel) arrive(st, i, c);
      }
      if (!complete(st, i, c)) break;
      st.head_started[s] = false;
      ++st.done;
      ++st.cursor[s];
      if (queues_ && c != kNoChannel) ++st.queue_cursor[static_cast<size_t>(st.queue_of[c])];
      progress = true;
    }
  }
  return progress;
}

void AbstractExecutor::enqueue(size_t i) {
  if (queued_[i]) return;
  queued_[i] = true;
  work_.push_back(i);
}

void AbstractExecutor::run() {
  queued_.assign(ranks_.size(), false);
  for (size_t i = 0; i < ranks_.size(); ++i) enqueue(i);
  while (!work_.empty()) {
    const size_t i = work_.front();
    work_.pop_front();
    queued_[i] = false;
    while (sweep(ranks_[i])) {}
  }
}

void AbstractExecutor::lift_queues() {
  TWINSCALE_ASSERT(!model_.issue_order && model_.comms.directed_p2p == kDeviceCommModel.directed_p2p &&
                       model_.comms.dp_by_priority == kDeviceCommModel.dp_by_priority,
                   "the stream semantics continue only from the devices' model in program order");
  queues_ = false;
  run();
}

bool AbstractExecutor::all_done() const {
  for (const RankRun& st : ranks_)
    if (st.done < st.program->ops.size()) return false;
  return true;
}

std::vector<Violation> execute(const ExecutionRules& rules, const ExecutionModel& model, size_t max_violations) {
  AbstractExecutor ex(rules, model, max_violations);
  ex.run();
  if (!model.comm_queues) return ex.deadlock_report(max_violations);
  std::vector<Violation> out = std::move(ex.mismatches());
  if (ex.all_done() || out.size() >= max_violations) return out;
  for (Violation& v : ex.queue_report(max_violations - out.size())) out.push_back(std::move(v));
  if (!model.stream_fallback) return out;
  ex.lift_queues();
  return ex.all_done() ? out : ex.deadlock_report(max_violations);
}

} // namespace twinscale::schedules::detail
