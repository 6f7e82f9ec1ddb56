// Errors of the real backend that come from user input or the launch environment
// (bad CLI values, a rank count that does not match the schedule, an unreachable store).
// Expected run outcomes (a timeout, a dead peer) are values in RunOutcome, not errors.
#pragma once

#include <string>

#include "common/error.hpp"

namespace twinscale::backend {

class BackendError : public Error {
public:
  explicit BackendError(const std::string& what) : Error(what) {}
};

} // namespace twinscale::backend
