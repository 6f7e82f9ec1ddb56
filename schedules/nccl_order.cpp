// Communicators as the devices pick them, and the NCCL-order check: the abstract
// execution (detail/abstract_execution.cpp) with every communicator's queue in issue
// order on top of the stream semantics.
#include "schedules/nccl_order.hpp"

#include "schedules/detail/abstract_execution.hpp"
#include "schedules/error.hpp"
#include "schedules/execution_rules.hpp"

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

std::vector<Violation> check_nccl_order(const Schedule& schedule, const CommModel& model, const IssueOrder& issue_order,
                                        size_t max_violations) {
  const ExecutionRules rules(schedule);
  detail::ExecutionModel m;
  m.comm_queues = true;
  m.comms = model;
  m.issue_order = issue_order;
  return detail::execute(rules, m, max_violations);
}

} // namespace twinscale::schedules
