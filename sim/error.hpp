// The simulator's typed error (common/error.hpp): options or inputs it cannot run (a
// channel count out of range, a fault plan in the analytic mode, a trace rank outside the
// job, a GPU without peak figures) or SimGrid refusing the platform. The message names
// the option, rank or GPU and what would be valid.
#pragma once

#include <string>

#include "common/error.hpp"

namespace twinscale::sim {

class SimError : public Error {
public:
  explicit SimError(const std::string& what) : Error(what) {}
};

} // namespace twinscale::sim
