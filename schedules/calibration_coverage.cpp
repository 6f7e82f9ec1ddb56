#include "schedules/calibration_coverage.hpp"

#include <string>

#include "schedules/error.hpp"

namespace twinscale::schedules {

bool covered_by(const CalibrationTable& table, const Schedule& schedule, const Op& op, CommSpan span) {
  if (!op.is_communication()) {
    const std::string_view name =
        op.name < schedule.names.size() ? std::string_view(schedule.names[op.name]) : std::string_view();
    return table.kernel_seconds(op, name).has_value();
  }
  if (op.kind == OpKind::Send || op.kind == OpKind::Recv)
    return table.comm_seconds(OpKind::Send, 2, op.bytes, span).has_value();
  return table.comm_seconds(op.kind, schedule.layout.group_size(op.group), op.bytes, span).has_value();
}

namespace {

/// Where op `op` of `rank` communicates: every member (or the peer) on the rank's host or not.
CommSpan span_of(const Schedule& schedule, int64_t rank, const Op& op, const std::vector<int64_t>& host_of_rank) {
  if (!op.is_communication() || host_of_rank.size() != static_cast<size_t>(schedule.world())) return CommSpan::Any;
  const int64_t host = host_of_rank[static_cast<size_t>(rank)];
  auto on_host = [&](int64_t r) {
    return r >= 0 && r < schedule.world() && host_of_rank[static_cast<size_t>(r)] == host;
  };
  const std::vector<int64_t> members = schedule.layout.group_members(op.group, rank);
  if (op.kind == OpKind::Send || op.kind == OpKind::Recv) { // peer: its rank inside the group
    const bool known = op.peer >= 0 && static_cast<size_t>(op.peer) < members.size();
    return known && on_host(members[static_cast<size_t>(op.peer)]) ? CommSpan::SameHost : CommSpan::CrossHost;
  }
  for (int64_t m : members)
    if (!on_host(m)) return CommSpan::CrossHost;
  return CommSpan::SameHost;
}

} // namespace

CalibrationCoverage calibration_coverage(const CalibrationTable& table, const Schedule& schedule, const Trace& trace,
                                         const std::vector<int64_t>& host_of_rank) {
  CalibrationCoverage c;
  for (const TraceEvent& e : trace.events) {
    if (e.rank < 0 || e.rank >= schedule.world() || e.op_index >= schedule.program(e.rank).ops.size())
      throw ScheduleError("calibration coverage: trace event of rank " + std::to_string(e.rank) + " op " +
                          std::to_string(e.op_index) + " is not in the schedule");
    const Op& op = schedule.program(e.rank).ops[e.op_index];
    const double d = e.end_s > e.start_s ? e.end_s - e.start_s : 0.0;
    ++c.ops;
    c.seconds += d;
    if (covered_by(table, schedule, op, span_of(schedule, e.rank, op, host_of_rank))) {
      ++c.measured_ops;
      c.measured_seconds += d;
    }
  }
  return c;
}

} // namespace twinscale::schedules
