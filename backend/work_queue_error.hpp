// Errors of the MPI work queue: a bad item or an MPI start-up that failed, and the error
// on one rank that every rank of the job must end for.
#pragma once

#include <string>

#include "common/error.hpp"

namespace twinscale::backend {

class WorkQueueError : public Error {
public:
  explicit WorkQueueError(const std::string& what) : Error(what) {}
};

/// An error on one rank of an MPI job that every rank must end for (the others would wait
/// for it forever), e.g. a work-queue item that failed. The library only throws it; the
/// program's main prints it and ends the job (end_mpi_job), and MpiSession leaves MPI
/// unfinalised while it propagates.
class MpiJobError : public WorkQueueError {
public:
  explicit MpiJobError(const std::string& what) : WorkQueueError(what) {}
};

} // namespace twinscale::backend
