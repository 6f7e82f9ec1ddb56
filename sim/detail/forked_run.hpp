// Runs a flow-mode body in a forked child (SimGrid 3.32's engine is a process-wide
// singleton that cannot be re-created) and brings back the string it returns; an
// exception in the child is rethrown in the parent with its type (ScheduleError,
// TopologyError, std::logic_error, else SimError). TWINSCALE_SIM_NO_FORK=1 runs the body
// in this process (debuggers, profilers). SIGINT, SIGTERM and SIGHUP reach the child
// (schedules/interrupt.hpp): the parent waits for it, then throws InterruptedError; the
// child also ends when the parent dies (PR_SET_PDEATHSIG), so none is orphaned.
#pragma once

#include <functional>
#include <string>

namespace twinscale::sim::detail {

std::string run_forked(const std::function<std::string()>& body, const std::string& what);

} // namespace twinscale::sim::detail
