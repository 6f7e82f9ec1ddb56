// The probe's overlap measurement: how compute and communication slow each
// other down on the CPU device when a rank runs them at once, as a run does (the
// device's compute worker thread runs kernels while the executor's thread posts and
// tests non-blocking MPI collectives between short idle waits). Every rank of the job
// measures at once, in rounds of:
// - a GEMM timed on the probe's thread after a short idle wait (as the kernel replay) and
//   back to back;
// - the same GEMMs back to back on a worker thread while the main thread idles as the
//   executor does (condition-variable waits of ExecutorOptions::idle_wait_s);
// - the same GEMMs on the worker while the main thread runs all-reduces of the job's
//   largest gradient all-reduce (over the world) back to back, progressed as the CPU
//   device does (MPI_Test between idle waits);
// - the same all-reduces with no compute beside them.
// The compute slowdown under communication becomes the measured device's
// nccl_compute_slowdown in the cluster description the probe writes (docs/backend.md
// "Overlap").
#pragma once

#include <cstdint>
#include <string>

#include "schedules/schedule.hpp"

namespace twinscale::backend {

struct ProbeOptions;

struct OverlapFacts {
  std::string gemm;       // the GEMM measured: its name and executed shape
  double comm_bytes = 0;  // executed bytes of the all-reduce measured (world group)
  int64_t group_size = 0; // ranks of that all-reduce
  double gemm_nap_s = 0;  // GEMM on the probe's thread after an idle wait (kernel replay)
  double gemm_back_to_back_s = 0;
  double gemm_worker_s = 0;      // back to back on a worker, the main thread idling as the executor
  double gemm_during_comm_s = 0; // on the worker while all-reduces run
  double comm_alone_s = 0;       // one all-reduce, nothing else running on the rank
  double comm_during_compute_s = 0;
  /// Compute time factor − 1 while the rank communicates (≥ 0): gemm_during_comm /
  /// gemm_worker − 1.
  double compute_slowdown() const;
  /// Communication time factor − 1 while the rank computes (≥ 0).
  double comm_slowdown() const;
};

/// Measures on every rank at once (collective over MPI_COMM_WORLD; MPI is initialised).
/// Every rank returns the mean over ranks of each median. Facts are zero when the
/// schedule has no GEMM or the world has one rank.
OverlapFacts measure_overlap(const schedules::Schedule& schedule, const ProbeOptions& options, int rank, int world);

/// The facts as lines of text (the probe prints them; docs/backend.md quotes them).
std::string overlap_report(const OverlapFacts& facts);

} // namespace twinscale::backend
