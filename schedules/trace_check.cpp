#include "schedules/trace_check.hpp"

#include <map>
#include <optional>

#include "schedules/nccl_order.hpp"

namespace twinscale::schedules {

namespace {

/// The ordered channel of an op (nccl_order.hpp with the devices' model: one per
/// collective group, one per directed point-to-point pair); empty for compute ops.
std::string channel_of(const Schedule& s, int64_t rank, const Op& op) {
  return communicator_of(s, rank, op, kDeviceCommModel);
}

/// Global ranks an op of `rank` needs: its group's members (collectives) or its peer.
std::vector<int64_t> peers_of(const Schedule& s, int64_t rank, const Op& op) {
  if (!op.is_communication()) return {};
  auto members = s.layout.group_members(op.group, rank);
  if (op.is_collective()) return members;
  return {members[static_cast<size_t>(op.peer)]};
}

} // namespace

std::vector<std::string> check_trace_semantics(const Schedule& s, const std::vector<TraceEvent>& events, double slack) {
  std::vector<std::string> bad;
  auto where = [&](int64_t rank, uint32_t i) {
    const Op& op = s.program(rank).ops[i];
    return "rank " + std::to_string(rank) + " op " + std::to_string(i) + " (" +
           (op.name < s.names.size() ? s.names[op.name] : std::string(to_string(op.kind))) + ")";
  };
  std::vector<std::vector<std::optional<TraceEvent>>> ev(static_cast<size_t>(s.world()));
  for (int64_t r = 0; r < s.world(); ++r) ev[static_cast<size_t>(r)].resize(s.program(r).ops.size());
  for (const auto& e : events) {
    if (e.rank < 0 || e.rank >= s.world() || e.op_index >= ev[static_cast<size_t>(e.rank)].size()) {
      bad.push_back("event of rank " + std::to_string(e.rank) + " op " + std::to_string(e.op_index) +
                    " is not in the schedule");
      continue;
    }
    auto& slot = ev[static_cast<size_t>(e.rank)][e.op_index];
    if (slot) bad.push_back(where(e.rank, e.op_index) + " appears twice");
    slot = e;
  }
  // (rank, channel, sequence) → event, for matching across ranks.
  std::map<std::tuple<int64_t, std::string, int64_t>, std::pair<uint32_t, TraceEvent>> by_channel;
  for (int64_t r = 0; r < s.world(); ++r) {
    const auto& prog = s.program(r);
    const auto& re = ev[static_cast<size_t>(r)];
    std::map<int, uint32_t> last_on_stream;
    std::map<std::string, int64_t> seq;
    for (uint32_t i = 0; i < prog.ops.size(); ++i) {
      const Op& op = prog.ops[i];
      if (!re[i]) {
        bad.push_back(where(r, i) + " did not run");
        continue;
      }
      if (re[i]->failed) bad.push_back(where(r, i) + " failed");
      if (re[i]->end_s + slack < re[i]->start_s) bad.push_back(where(r, i) + " ends before it starts");
      const int st = static_cast<int>(op.stream);
      if (auto it = last_on_stream.find(st);
          it != last_on_stream.end() && re[it->second] && re[i]->start_s + slack < re[it->second]->end_s)
        bad.push_back(where(r, i) + " started before its stream predecessor op " + std::to_string(it->second) +
                      " ended");
      last_on_stream[st] = i;
      for (uint32_t d : prog.deps_of(i))
        if (re[d] && re[i]->start_s + slack < re[d]->end_s)
          bad.push_back(where(r, i) + " started before its dependency op " + std::to_string(d) + " ended");
      const std::string ch = channel_of(s, r, op);
      if (!ch.empty()) by_channel[{r, ch, seq[ch]++}] = {i, *re[i]};
    }
  }
  for (const auto& [key, val] : by_channel) {
    const auto& [r, ch, k] = key;
    const Op& op = s.program(r).ops[val.first];
    if (op.kind == OpKind::Recv) {
      const int64_t peer = peers_of(s, r, op).front();
      const std::string mirror = "send:" + std::string(to_string(op.group)) + ":" + std::to_string(r);
      auto it = by_channel.find({peer, mirror, k});
      if (it == by_channel.end())
        bad.push_back(where(r, val.first) + " has no matching send on rank " + std::to_string(peer));
      else if (val.second.end_s + slack < it->second.second.start_s)
        bad.push_back(where(r, val.first) + " finished before its send on rank " + std::to_string(peer) + " started");
    } else if (op.is_collective() && op.kind != OpKind::Broadcast) {
      double last_start = 0;
      for (int64_t m : peers_of(s, r, op)) {
        auto it = by_channel.find({m, ch, k});
        if (it == by_channel.end()) {
          bad.push_back(where(r, val.first) + ": member rank " + std::to_string(m) + " has no matching op");
          continue;
        }
        last_start = std::max(last_start, it->second.second.start_s);
      }
      if (val.second.end_s + slack < last_start)
        bad.push_back(where(r, val.first) + " finished before every member of its " + ch + " group started it");
    }
  }
  return bad;
}

} // namespace twinscale::schedules
