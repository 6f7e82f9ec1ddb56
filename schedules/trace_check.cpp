#include "schedules/trace_check.hpp"

#include <algorithm>
#include <optional>

#include "schedules/execution_rules.hpp"

namespace twinscale::schedules {

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
  const ExecutionRules rules(s);
  for (int64_t r = 0; r < s.world(); ++r) {
    const ProgramIndex& ix = rules.of_rank(r);
    const auto& re = ev[static_cast<size_t>(r)];
    for (uint32_t i = 0; i < ix.size(); ++i) {
      if (!re[i]) {
        bad.push_back(where(r, i) + " did not run");
        continue;
      }
      if (re[i]->failed) bad.push_back(where(r, i) + " failed");
      if (re[i]->end_s + slack < re[i]->start_s) bad.push_back(where(r, i) + " ends before it starts");
      const int64_t prev = ix.stream_prev(i);
      if (prev >= 0 && re[static_cast<size_t>(prev)] && re[i]->start_s + slack < re[static_cast<size_t>(prev)]->end_s)
        bad.push_back(where(r, i) + " started before its stream predecessor op " + std::to_string(prev) + " ended");
      for (uint32_t d : ix.deps(i))
        if (re[d] && re[i]->start_s + slack < re[d]->end_s)
          bad.push_back(where(r, i) + " started before its dependency op " + std::to_string(d) + " ended");
    }
  }
  for (int64_t r = 0; r < s.world(); ++r) { // then matching across ranks
    const ProgramIndex& ix = rules.of_rank(r);
    const auto& re = ev[static_cast<size_t>(r)];
    for (uint32_t i = 0; i < ix.size(); ++i) {
      const Op& op = ix.program().ops[i];
      if (!re[i]) continue;
      if (op.kind == OpKind::Recv) { // rule 3: the k-th receive from a peer meets its k-th send
        const auto p = rules.partner(r, i);
        const auto& pe = ev[static_cast<size_t>(p.rank)];
        if (p.op < 0 || !pe[static_cast<size_t>(p.op)])
          bad.push_back(where(r, i) + " has no matching send on rank " + std::to_string(p.rank));
        else if (re[i]->end_s + slack < pe[static_cast<size_t>(p.op)]->start_s)
          bad.push_back(where(r, i) + " finished before its send on rank " + std::to_string(p.rank) + " started");
      } else if (op.is_collective() && op.kind != OpKind::Broadcast) { // rule 2: instance k on every member
        const Channel& c = ix.channels()[ix.channel(i)];
        const uint32_t k = ix.sequence(i);
        double last_start = 0;
        for (int64_t m : s.layout.group_members(op.group, r)) {
          const ProgramIndex& mx = rules.of_rank(m);
          const uint16_t mc = mx.find_channel(c);
          const int64_t mo = mc != kNoChannel && k < mx.channel_ops(mc).size() ? mx.channel_ops(mc)[k] : -1;
          const auto& me = ev[static_cast<size_t>(m)];
          if (mo < 0 || !me[static_cast<size_t>(mo)]) {
            bad.push_back(where(r, i) + ": member rank " + std::to_string(m) + " has no matching op");
            continue;
          }
          last_start = std::max(last_start, me[static_cast<size_t>(mo)]->start_s);
        }
        if (re[i]->end_s + slack < last_start)
          bad.push_back(where(r, i) + " finished before every member of its " + describe(c) + " instance " +
                        std::to_string(k) + " started it");
      }
    }
  }
  return bad;
}

} // namespace twinscale::schedules
