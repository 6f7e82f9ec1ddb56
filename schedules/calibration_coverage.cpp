#include "schedules/calibration_coverage.hpp"

#include <string>

#include "schedules/error.hpp"

namespace twinscale::schedules {

bool covered_by(const CalibrationTable& table, const Schedule& schedule, const Op& op) {
  if (!op.is_communication()) {
    const std::string_view name =
        op.name < schedule.names.size() ? std::string_view(schedule.names[op.name]) : std::string_view();
    return table.kernel_seconds(op, name).has_value();
  }
  if (op.kind == OpKind::Send || op.kind == OpKind::Recv)
    return table.comm_seconds(OpKind::Send, 2, op.bytes).has_value();
  return table.comm_seconds(op.kind, schedule.layout.group_size(op.group), op.bytes).has_value();
}

CalibrationCoverage calibration_coverage(const CalibrationTable& table, const Schedule& schedule, const Trace& trace) {
  CalibrationCoverage c;
  for (const TraceEvent& e : trace.events) {
    if (e.rank < 0 || e.rank >= schedule.world() || e.op_index >= schedule.program(e.rank).ops.size())
      throw ScheduleError("calibration coverage: trace event of rank " + std::to_string(e.rank) + " op " +
                          std::to_string(e.op_index) + " is not in the schedule");
    const Op& op = schedule.program(e.rank).ops[e.op_index];
    const double d = e.end_s > e.start_s ? e.end_s - e.start_s : 0.0;
    ++c.ops;
    c.seconds += d;
    if (covered_by(table, schedule, op)) {
      ++c.measured_ops;
      c.measured_seconds += d;
    }
  }
  return c;
}

} // namespace twinscale::schedules
