// A small generic MPI work queue: rank 0 hands out item numbers one at a time as ranks
// ask for more (dynamic, so slow and fast items balance), every rank computes, and the
// results (opaque strings) come back to rank 0, which consumes them in arrival order.
// Knows nothing of what an item is; `twinscale sweep` uses it for study points.
//
//   backend::MpiSession mpi;               // MPI_Init unless already initialised
//   backend::run_work_queue(items, compute, consume, options);  // collective
//
// Rank 0 also computes unless options.root_computes is false. When MPI grants
// MPI_THREAD_SERIALIZED (MpiSession asks for it), rank 0 computes on the calling thread
// while a service thread answers the workers, takes results in and consumes them, so a
// worker never waits for rank 0 to finish a point of its own; otherwise rank 0 serves
// between its own items. Each worker holds up to `prefetch` items (fewer near the end,
// so no rank is left with a backlog). Sends are non-blocking, and every wait (for an
// item, a result, a send, the broadcast, the barrier before MPI_Finalize) polls with
// short sleeps instead of MPI's busy polling, so a waiting rank or thread leaves the CPU
// to computing ones. A rank that dies takes the job down with it (mpirun's default);
// callers make consume() durable so that a rerun resumes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace twinscale::backend {

/// Ends every rank of the MPI job with `code` (MPI_Abort on the world). Only a program's
/// main calls it, once an MpiJobError reached it; the library itself never ends the job.
[[noreturn]] void end_mpi_job(int code);

/// MPI for the duration of a scope: initialises MPI if it is not yet (asking for
/// MPI_THREAD_SERIALIZED, for rank 0's service thread) and finalises it at scope exit if
/// it initialised it, unless an MpiJobError was thrown (main then ends the job).
class MpiSession {
public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Collective: every rank returns rank 0's `flag` (e.g. "rank 0 could open the store").
  bool broadcast(bool flag) const;

private:
  bool owns_ = false;
  int rank_ = 0;
  int size_ = 1;
};

struct WorkQueueOptions {
  bool root_computes = true; // rank 0 computes items too (right for a few ranks)
  int prefetch = 2;          // items outstanding per worker rank (≥ 1)
};

struct WorkQueueStats {
  int64_t items_total = 0; // rank 0: items handed out (including its own)
  int64_t items_here = 0;  // items this rank computed
  double wait_s = 0;       // wall time this rank waited for items or results
};

/// Collective over MPI_COMM_WORLD. `items` (each ≥ 0) matters on rank 0 only.
/// compute(item) runs on whichever rank gets the item; consume(item, result) runs on
/// rank 0 for every item, in arrival order, on one thread (not necessarily the caller's).
/// An exception thrown by compute or consume on any rank is rethrown on that rank's calling
/// thread as MpiJobError (work_queue/error.hpp), naming the rank: the job must end on every
/// rank (the others would wait forever), which main does with MPI_Abort.
WorkQueueStats run_work_queue(const std::vector<int64_t>& items, const std::function<std::string(int64_t)>& compute,
                              const std::function<void(int64_t, const std::string&)>& consume,
                              const WorkQueueOptions& options = {});

} // namespace twinscale::backend
