// Checks that a trace (a real run's events or the simulator's) is an execution the
// schedule's semantics allow (schedules/execution_rules.hpp, schedule.hpp): every op ran;
// on each stream an op started after its predecessor ended; after its dependencies
// ended; every member of a collective started it before any member finished it; a
// receive finished after its send started. Times must share one clock (one host, or
// clocks aligned by the runner's epoch; the simulator's clock).
#pragma once

#include <string>
#include <vector>

#include "schedules/schedule.hpp"
#include "schedules/trace.hpp"

namespace twinscale::schedules {

/// Violations, one line each (empty: the run is valid). `slack_s` tolerates clock
/// granularity between processes.
std::vector<std::string> check_trace_semantics(const Schedule& schedule, const std::vector<TraceEvent>& events,
                                               double slack_s = 1e-6);

} // namespace twinscale::schedules
