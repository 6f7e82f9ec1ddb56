// The trace checker lives in schedules/trace_check.hpp (one statement of the execution
// rules, for the simulator's traces and the backend's alike); backend code keeps its name.
#pragma once

#include "schedules/trace_check.hpp"

namespace twinscale::backend {
using schedules::check_trace_semantics;
} // namespace twinscale::backend
