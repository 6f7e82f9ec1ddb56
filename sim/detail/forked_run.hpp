// Runs a flow-mode body in a forked child (SimGrid 3.32's engine is a process-wide
// singleton that cannot be re-created) and brings back the string it returns; an
// exception in the child is rethrown in the parent with its type (ScheduleError,
// TopologyError, std::logic_error, else SimError). TWINSCALE_SIM_NO_FORK=1 runs the body
// in this process (debuggers, profilers).
#pragma once

#include <functional>
#include <string>

namespace twinscale::sim::detail {

std::string run_forked(const std::function<std::string()>& body, const std::string& what);

} // namespace twinscale::sim::detail
