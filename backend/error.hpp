// Errors of the real backend that come from user input or the launch environment
// (bad CLI values, a rank count that does not match the schedule, an unreachable store).
// Expected run outcomes (a timeout, a dead peer) are values in RunOutcome, not errors.
#pragma once

#include <stdexcept>
#include <string>

#include "common/error.hpp"

namespace twinscale::backend {

class BackendError : public Error {
public:
  explicit BackendError(const std::string& what) : Error(what) {}
};

/// An error on one rank of an MPI job that every rank must end for (the others would wait
/// for it forever), e.g. a work-queue item that failed. The library only throws it; the
/// program's main prints it and ends the job (MPI_Abort), and backend::MpiSession leaves
/// MPI unfinalised while it propagates.
class MpiJobError : public BackendError {
public:
  explicit MpiJobError(const std::string& what) : BackendError(what) {}
};

} // namespace twinscale::backend
