#include "schedules/execution_rules.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_set>

#include "common/helper_thread.hpp"
#include "schedules/error.hpp"

namespace twinscale::schedules {

void order_ready(const Program& p, std::span<uint32_t> ready) {
  for (size_t i = 1; i < ready.size(); ++i) { // insertion sort: a few elements, no allocation
    const uint32_t x = ready[i];
    size_t j = i;
    for (; j > 0 && starts_before(p, x, ready[j - 1]); --j) ready[j] = ready[j - 1];
    ready[j] = x;
  }
}

Channel channel_of(const Op& op) {
  TWINSCALE_ASSERT(op.is_communication(), "channel of a compute op");
  Channel c;
  c.group = op.group;
  if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
    c.dir = op.kind == OpKind::Send ? ChannelDir::Send : ChannelDir::Recv;
    c.peer = op.peer;
  } else if (op.group == GroupKind::Dp) {
    c.priority_class = op.priority;
  }
  return c;
}

std::string describe(const Channel& c) {
  std::string g(to_string(c.group));
  switch (c.dir) {
  case ChannelDir::Collective:
    return g + " group" + (c.priority_class != 0 ? " (priority class " + std::to_string(c.priority_class) + ")" : "");
  case ChannelDir::Send: return "sends to " + g + " peer " + std::to_string(c.peer);
  case ChannelDir::Recv: return "receives from " + g + " peer " + std::to_string(c.peer);
  }
  return g;
}

int64_t group_member(const Layout& L, GroupKind kind, int64_t rank, int64_t i) {
  return group_member(L, kind, rank, L.coord(rank), i);
}

int64_t group_member(const Layout& L, GroupKind kind, int64_t rank, const RankCoord& c, int64_t i) {
  const int64_t size = L.group_size(kind);
  if (i < 0 || i >= size)
    throw ScheduleError("rank " + std::to_string(rank) + ": member " + std::to_string(i) + " outside its " +
                        std::string(to_string(kind)) + " group of " + std::to_string(size) + " (valid: 0.." +
                        std::to_string(size - 1) + ")");
  if (L.folded_experts() && (is_expert_parallel(kind) || kind == GroupKind::ExpertDp))
    return L.folded_member(kind, rank, i);
  switch (kind) {
  case GroupKind::Tp: return L.rank({i, c.dp, c.pp});
  case GroupKind::Dp: return L.rank({c.tp, i, c.pp});
  case GroupKind::Pp: return L.rank({c.tp, c.dp, i});
  case GroupKind::Embedding: return L.rank({c.tp, c.dp, i == 0 ? 0 : L.pp - 1});
  case GroupKind::Ep: return L.rank({c.tp, c.dp / L.ep * L.ep + i, c.pp});
  case GroupKind::Cp: return L.rank({c.tp, c.dp / L.cp * L.cp + i, c.pp}); // cp folded into dp (layout.hpp)
  case GroupKind::ExpertDp: return L.rank({i % L.tp, c.dp % L.ep + i / L.tp * L.ep, c.pp});
  case GroupKind::EpNode: return L.rank({c.tp, c.dp / L.ep_node * L.ep_node + i, c.pp});
  case GroupKind::EpRail: return L.rank({c.tp, c.dp / L.ep * L.ep + c.dp % L.ep_node + i * L.ep_node, c.pp});
  case GroupKind::World: return i;
  }
  TWINSCALE_ASSERT(false, "unknown GroupKind");
}

namespace {

std::string where(size_t program_id, uint32_t op) {
  return "program " + std::to_string(program_id) + " op " + std::to_string(op);
}

} // namespace

ProgramIndex::ProgramIndex(const Program& p, size_t program_id) : program_(&p) {
  // One pass over the ops (each several cache lines); the rest reads compact arrays.
  const auto n = static_cast<uint32_t>(p.ops.size());
  position_.resize(n);
  channel_.assign(n, kNoChannel);
  sequence_.assign(n, 0);
  std::vector<uint8_t> stream_of(n);
  std::vector<Channel> of_op;          // the channel of each communication op, in program order
  std::vector<uint32_t> communication; // those ops
  std::array<uint32_t, kStreamCount> count{};
  for (uint32_t i = 0; i < n; ++i) {
    const Op& op = p.ops[i];
    const auto s = static_cast<size_t>(op.stream);
    if (s >= static_cast<size_t>(kStreamCount))
      throw ScheduleError(where(program_id, i) + ": stream " + std::to_string(s) + " out of range (valid: 0.." +
                          std::to_string(kStreamCount - 1) + ")");
    position_[i] = count[s]++;
    stream_of[i] = static_cast<uint8_t>(s);
    if (static_cast<size_t>(op.dep_begin) + op.dep_count > p.deps.size())
      throw ScheduleError(where(program_id, i) + ": dependency range past the end of deps");
    for (uint32_t d : p.deps_of(op))
      if (d >= i)
        throw ScheduleError(where(program_id, i) + ": depends on op " + std::to_string(d) +
                            " which is not earlier in the program");
    if (op.is_communication()) {
      of_op.push_back(channel_of(op));
      communication.push_back(i);
    }
  }
  // each stream's list sized once (no regrowth: each doubling copies it and leaves a hole
  // the size of the old one)
  for (size_t s = 0; s < count.size(); ++s) stream_ops_[s].resize(count[s]);
  for (uint32_t i = 0; i < n; ++i) stream_ops_[stream_of[i]][position_[i]] = i;
  // the distinct channels, sorted: a program has a few, so each new one is inserted in
  // place (no sort of every communication op's); past 64 the plain sort of all of them
  for (size_t j = 0; j < of_op.size(); ++j) {
    const Channel& c = of_op[j];
    if (j > 0 && c == of_op[j - 1]) continue; // runs of one channel: already inserted
    auto it = std::lower_bound(channels_.begin(), channels_.end(), c);
    if (it != channels_.end() && *it == c) continue;
    if (channels_.size() == 64) {
      channels_ = of_op;
      std::sort(channels_.begin(), channels_.end());
      channels_.erase(std::unique(channels_.begin(), channels_.end()), channels_.end());
      break;
    }
    channels_.insert(it, c);
  }
  if (channels_.size() >= kNoChannel)
    throw ScheduleError("program " + std::to_string(program_id) + ": " + std::to_string(channels_.size()) +
                        " communication channels (at most " + std::to_string(kNoChannel - 1) + ")");
  channel_begin_.assign(channels_.size() + 1, 0);
  uint16_t ch = 0; // the channel of of_op[k - 1], reused while the channel repeats
  for (size_t k = 0; k < communication.size(); ++k) {
    if (k == 0 || of_op[k] != of_op[k - 1])
      ch = static_cast<uint16_t>(std::lower_bound(channels_.begin(), channels_.end(), of_op[k]) - channels_.begin());
    channel_[communication[k]] = ch;
    sequence_[communication[k]] = channel_begin_[ch + 1u]++; // counts per channel for now
  }
  for (size_t c = 0; c < channels_.size(); ++c) channel_begin_[c + 1] += channel_begin_[c];
  channel_ops_.resize(channel_begin_.back());
  for (const uint32_t i : communication) channel_ops_[channel_begin_[channel_[i]] + sequence_[i]] = i;
}

int64_t ProgramIndex::stream_prev(uint32_t op) const {
  const uint32_t pos = position_[op];
  if (pos == 0) return -1;
  return static_cast<int64_t>(stream_ops_[static_cast<size_t>(program_->ops[op].stream)][pos - 1]);
}

uint16_t ProgramIndex::find_channel(const Channel& c) const {
  auto it = std::lower_bound(channels_.begin(), channels_.end(), c);
  return it != channels_.end() && *it == c ? static_cast<uint16_t>(it - channels_.begin()) : kNoChannel;
}

std::vector<uint32_t> number_in_issue_order(const ProgramIndex& ix, std::span<const uint32_t> order,
                                            std::span<const uint32_t> class_of_channel) {
  const size_t n = ix.size();
  if (order.size() != n)
    throw ScheduleError("issue order has " + std::to_string(order.size()) + " ops, the program " + std::to_string(n) +
                        " (it must be a permutation of the op indices)");
  TWINSCALE_ASSERT(class_of_channel.size() == ix.channels().size(), "one class per channel");
  std::vector<uint32_t> out(n, 0);
  std::vector<bool> seen(n, false);
  std::vector<uint32_t> count(
      class_of_channel.empty() ? 0 : *std::max_element(class_of_channel.begin(), class_of_channel.end()) + size_t{1},
      0);
  for (uint32_t i : order) {
    if (i >= n || seen[i])
      throw ScheduleError("issue order names op " + std::to_string(i) + (i >= n ? " outside the program" : " twice") +
                          " (it must be a permutation of 0.." + std::to_string(n - 1) + ")");
    seen[i] = true;
    if (ix.channel(i) != kNoChannel) out[i] = count[class_of_channel[ix.channel(i)]]++;
  }
  return out;
}

ExecutionRules::ExecutionRules(const Schedule& s, HelperThread helper_thread) : schedule_(&s) {
  if (static_cast<int64_t>(s.program_of_rank.size()) != s.world())
    throw ScheduleError("schedule: program_of_rank has " + std::to_string(s.program_of_rank.size()) +
                        " entries, the layout has " + std::to_string(s.world()) + " ranks");
  for (size_t r = 0; r < s.program_of_rank.size(); ++r)
    if (s.program_of_rank[r] >= s.programs.size())
      throw ScheduleError("schedule: rank " + std::to_string(r) + " names program " +
                          std::to_string(s.program_of_rank[r]) + " of " + std::to_string(s.programs.size()));
  programs_.resize(s.programs.size());
  for_each_index_with_helper(s.programs.size(), helper_thread,
                             [&](size_t p) { programs_[p] = ProgramIndex(s.programs[p], p); });
}

ExecutionRules::Partner ExecutionRules::partner(int64_t rank, uint32_t op) const {
  const ProgramIndex& ix = of_rank(rank);
  TWINSCALE_ASSERT(op < ix.size() && ix.channel(op) != kNoChannel, "partner of a compute op");
  const Channel& c = ix.channels()[ix.channel(op)];
  TWINSCALE_ASSERT(c.dir != ChannelDir::Collective, "partner of a collective");
  const Layout& L = schedule_->layout;
  Partner out;
  out.rank = group_member(L, c.group, rank, c.peer);
  Channel mirror = c;
  mirror.dir = c.dir == ChannelDir::Send ? ChannelDir::Recv : ChannelDir::Send;
  mirror.peer = static_cast<int32_t>(L.group_rank(c.group, rank));
  const ProgramIndex& px = of_rank(out.rank);
  const uint16_t m = px.find_channel(mirror);
  if (m == kNoChannel) return out;
  const auto ops = px.channel_ops(m);
  if (ix.sequence(op) < ops.size()) out.op = ops[ix.sequence(op)];
  return out;
}

namespace {

std::string mib(double bytes) {
  std::ostringstream os;
  os << bytes << " bytes";
  return os.str();
}

std::string op_label(const Schedule& s, int64_t rank, int64_t op) {
  const Op& o = s.program(rank).ops[static_cast<size_t>(op)];
  return "op " + std::to_string(op) + " (" + (o.name < s.names.size() ? s.names[o.name] : "") + ", " +
         std::string(to_string(o.kind)) + " of " + mib(o.bytes) + ")";
}

/// Compares the instances of one collective channel on two members (a first, b other).
void compare_channel(const Schedule& s, const Channel& c, int64_t a, std::span<const uint32_t> x, int64_t b,
                     std::span<const uint32_t> y, std::vector<RuleMismatch>& out) {
  const auto& pa = s.program(a).ops;
  const auto& pb = s.program(b).ops;
  const size_t n = std::min(x.size(), y.size());
  RuleMismatch m;
  m.rank = b;
  m.other_rank = a;
  m.group = c.group;
  for (size_t k = 0; k < n; ++k) {
    if (pa[x[k]].kind == pb[y[k]].kind && pa[x[k]].bytes == pb[y[k]].bytes) continue;
    m.op = y[k];
    m.other_op = x[k];
    m.instance = static_cast<uint32_t>(k);
    m.reason = "rank " + std::to_string(b) + " " + op_label(s, b, y[k]) + " is instance " + std::to_string(k) +
               " on its " + describe(c) + ", but group member rank " + std::to_string(a) + " has " +
               op_label(s, a, x[k]) + " there (members must issue the same collectives in the same order)";
    out.push_back(std::move(m));
    return;
  }
  if (x.size() == y.size()) return;
  m.instance = static_cast<uint32_t>(n);
  if (y.size() > n) m.op = y[n];
  if (x.size() > n) m.other_op = x[n];
  m.reason = "rank " + std::to_string(b) + " issues " + std::to_string(y.size()) + " collectives on its " +
             describe(c) + " but group member rank " + std::to_string(a) + " issues " + std::to_string(x.size()) +
             " (instance " + std::to_string(n) + " has no match)";
  out.push_back(std::move(m));
}

} // namespace

std::vector<RuleMismatch> ExecutionRules::check_collectives(size_t max) const {
  const Schedule& s = *schedule_;
  const Layout& L = s.layout;
  std::vector<RuleMismatch> out;
  // (first's program, member's program) pairs compared, per group kind: most members
  // repeat a pair already compared, so the test is the loop's common path; a bit per pair
  // where the programs are few (a job lowered here has one per stage), else a hash set
  const uint64_t programs = s.programs.size();
  const bool dense = programs <= 2048;
  std::vector<uint64_t> compared_bits(dense ? (programs * programs + 63) / 64 : 0);
  std::unordered_set<uint64_t> compared_pairs;
  const auto first_comparison = [&](uint32_t p0, uint32_t pm) {
    const uint64_t pair = uint64_t{p0} * programs + pm;
    if (!dense) return compared_pairs.insert(pair).second;
    uint64_t& word = compared_bits[pair / 64];
    const uint64_t bit = uint64_t{1} << (pair % 64);
    if ((word & bit) != 0) return false;
    word |= bit;
    return true;
  };
  for (int k = 0; k < kGroupKindCount && out.size() < max; ++k) {
    const auto g = static_cast<GroupKind>(k);
    const int64_t size = L.group_size(g);
    if (size <= 1) continue; // no member to compare with (the loop below would find none)
    std::fill(compared_bits.begin(), compared_bits.end(), 0);
    compared_pairs.clear();
    for (int64_t r = 0; r < s.world() && out.size() < max; ++r) {
      const RankCoord c = L.coord(r);
      if (L.group_rank(g, r, c) != 0) continue; // each group once, from its first member
      const uint32_t p0 = s.program_of_rank[r];
      for (int64_t i = 1; i < size && out.size() < max; ++i) {
        const int64_t m = group_member(L, g, r, c, i);
        const uint32_t pm = s.program_of_rank[m];
        if (pm == p0 || !first_comparison(p0, pm)) continue;
        const ProgramIndex& a = programs_[p0];
        const ProgramIndex& b = programs_[pm];
        std::set<Channel> both; // the group's collective channels on either member
        for (const Channel& c : a.channels())
          if (c.group == g && c.dir == ChannelDir::Collective) both.insert(c);
        for (const Channel& c : b.channels())
          if (c.group == g && c.dir == ChannelDir::Collective) both.insert(c);
        for (const Channel& c : both) {
          const uint16_t ca = a.find_channel(c), cb = b.find_channel(c);
          compare_channel(s, c, r, ca == kNoChannel ? std::span<const uint32_t>{} : a.channel_ops(ca), m,
                          cb == kNoChannel ? std::span<const uint32_t>{} : b.channel_ops(cb), out);
          if (out.size() >= max) break;
        }
      }
      if (g == GroupKind::World) break;
    }
  }
  return out;
}

std::vector<RuleMismatch> ExecutionRules::check_messages(size_t max) const {
  const Schedule& s = *schedule_;
  const Layout& L = s.layout;
  std::vector<RuleMismatch> out;
  // The (peer's program, own index in the group) pairs settled for each channel of each
  // program: a send already compared, or a receive whose sender has the mirror channel
  // (compared from the sender's side). Both outcomes depend on those four values only,
  // and ranks repeat few of them: a short list per channel, scanned.
  struct Settled {
    uint32_t peer_program;
    int64_t me;
  };
  std::vector<size_t> first_channel(programs_.size() + 1, 0);
  for (size_t p = 0; p < programs_.size(); ++p)
    first_channel[p + 1] = first_channel[p] + programs_[p].channels().size();
  std::vector<std::vector<Settled>> settled(first_channel.back());
  for (int64_t r = 0; r < s.world() && out.size() < max; ++r) {
    const uint32_t program = s.program_of_rank[r];
    const ProgramIndex& ix = programs_[program];
    const RankCoord rc = L.coord(r);
    for (uint16_t c = 0; c < ix.channels().size() && out.size() < max; ++c) {
      const Channel& ch = ix.channels()[c];
      if (ch.dir == ChannelDir::Collective) continue;
      const bool send = ch.dir == ChannelDir::Send;
      const int64_t peer = group_member(L, ch.group, r, rc, ch.peer);
      const int64_t sender = send ? r : peer, receiver = send ? peer : r;
      const int64_t me = L.group_rank(ch.group, r, rc);
      const uint32_t peer_program = s.program_of_rank[peer];
      std::vector<Settled>& done = settled[first_channel[program] + c];
      if (std::any_of(done.begin(), done.end(),
                      [&](const Settled& d) { return d.peer_program == peer_program && d.me == me; }))
        continue;
      const Channel mirror{ch.group, send ? ChannelDir::Recv : ChannelDir::Send, static_cast<int32_t>(me), 0};
      const uint16_t mc = programs_[peer_program].find_channel(mirror);
      if (send || mc != kNoChannel) done.push_back({peer_program, me});
      if (!send && mc != kNoChannel) continue; // compared from the sender's side
      const auto mine = ix.channel_ops(c);
      const auto theirs = mc == kNoChannel ? std::span<const uint32_t>{} : of_rank(peer).channel_ops(mc);
      const auto sends = send ? mine : theirs, recvs = send ? theirs : mine;
      const size_t n = std::min(sends.size(), recvs.size());
      RuleMismatch m;
      m.rank = receiver;
      m.other_rank = sender;
      m.group = ch.group;
      for (size_t k = 0; k < n && m.reason.empty(); ++k) {
        const double sb = s.program(sender).ops[sends[k]].bytes, rb = s.program(receiver).ops[recvs[k]].bytes;
        if (sb == rb) continue;
        m.op = recvs[k];
        m.other_op = sends[k];
        m.instance = static_cast<uint32_t>(k);
        m.reason = "send #" + std::to_string(k) + " from rank " + std::to_string(sender) + " (" +
                   op_label(s, sender, sends[k]) + ") carries " + mib(sb) + " but its matching receive on rank " +
                   std::to_string(receiver) + " (" + op_label(s, receiver, recvs[k]) + ") expects " + mib(rb);
      }
      if (m.reason.empty() && sends.size() != recvs.size()) {
        m.instance = static_cast<uint32_t>(n);
        if (recvs.size() > n) m.op = recvs[n];
        if (sends.size() > n) m.other_op = sends[n];
        const std::string counts =
            " (" + std::to_string(sends.size()) + " sends, " + std::to_string(recvs.size()) + " receives)";
        m.reason = sends.size() > n ? "send #" + std::to_string(n) + " from rank " + std::to_string(sender) +
                                          " to rank " + std::to_string(receiver) + " has no matching recv" + counts
                                    : "recv #" + std::to_string(n) + " at rank " + std::to_string(receiver) +
                                          " from rank " + std::to_string(sender) + " has no matching send" + counts;
      }
      if (!m.reason.empty()) out.push_back(std::move(m));
    }
  }
  return out;
}

} // namespace twinscale::schedules
