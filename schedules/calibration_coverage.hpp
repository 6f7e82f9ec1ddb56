// Coverage of a simulation by a calibration table: which share of the ops, and of their
// predicted time, came from measured entries (CalibrationTable::kernel_seconds and
// comm_seconds, the lookup rule the simulator applies) rather than from the model.
#pragma once

#include <cstdint>
#include <vector>

#include "schedules/calibration.hpp"
#include "schedules/schedule.hpp"
#include "schedules/trace.hpp"

namespace twinscale::schedules {

struct CalibrationCoverage {
  int64_t ops = 0;          // events of the trace counted
  int64_t measured_ops = 0; // of which the table has an entry (or an interpolation)
  double seconds = 0;       // summed durations of the counted events
  double measured_seconds = 0;
  double op_share() const { return ops > 0 ? static_cast<double>(measured_ops) / static_cast<double>(ops) : 0; }
  double time_share() const { return seconds > 0 ? measured_seconds / seconds : 0; }
};

/// True when `table` gives op `op` its time under the lookup rule: a compute op
/// with a kernel entry; a collective whose kind and group size (or bracketing group
/// sizes) were measured; a send or receive when point-to-point messages were measured;
/// a collective of one rank (no communication).
/// `span`: where the op's group (or send/receive pair) lies (the simulator's rule).
bool covered_by(const CalibrationTable& table, const Schedule& schedule, const Op& op, CommSpan span = CommSpan::Any);

/// Coverage over the events of `trace` (a simulated trace of `schedule`), by count and by
/// duration. Events of ranks or ops outside the schedule throw ScheduleError.
/// `host_of_rank` (the host, e.g. server, of every rank; empty: not known) gives each
/// communication its span, as the simulator looks it up.
CalibrationCoverage calibration_coverage(const CalibrationTable& table, const Schedule& schedule, const Trace& trace,
                                         const std::vector<int64_t>& host_of_rank = {});

} // namespace twinscale::schedules
