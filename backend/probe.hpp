// `twinscale probe`: micro-benchmarks of one machine, run as every rank of a job (under
// mpirun or srun, like `run`). It measures exactly what the job's schedule contains, on
// the device it runs on (the CPU device: fp32 at the shapes divided by shape_divisor):
// - every compute op of the rank's program, replayed as a run executes it: the program
//   without its communication, run by the real executor on a fresh, warmed CPU device
//   each repetition (detail/probe_replay.hpp); per op key the median of its
//   occurrences, then of every rank's repetitions; the hand-off between consecutive
//   ops on the way;
// - compute and communication at once (probe_overlap.hpp): the compute slowdown under
//   communication goes into the cluster description;
// - every distinct collective (kind, executed bytes, group size) on groups of that size
//   made of consecutive ranks, all groups at once, timed between barriers;
// - point-to-point one-way time (half a ping-pong between rank pairs);
// - size sweeps of point-to-point and of each collective kind of the schedule at every
//   group size it uses, each transfer checked element by element (#wrong).
// It returns (on rank 0) a calibration table (source "cpu", the shape divisor) and a
// cluster description of the measured machine; docs/backend.md "Probe".
// One driver, two devices (backend/probe_device.hpp): on the CUDA device
// (--device cuda, backend/cuda/cuda_probe.hpp) the same ops run as `run --device cuda`
// runs them, timed by CUDA events on the op's stream; transfers go through NCCL in
// bf16; the table's source is "cuda", its entries keyed by each op's dtype (bf16, fp8).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "backend/probe_overlap.hpp"
#include "schedules/calibration.hpp"
#include "schedules/schedule.hpp"

namespace twinscale::backend {

struct ProbeOptions {
  std::string device = "cpu"; // "cpu" or "cuda" (backend/probe_device.hpp: one driver, two devices)
  int64_t shape_divisor = 1;  // the CPU device's; the CUDA device runs the scheduled shapes (1)
  int warmup = 2;
  int repetitions = 7;           // the median of these is kept
  double max_sweep_bytes = 0;    // 0: 4 × the largest message, 2 × the whole model's fp32 gradients, ≥ 64 KiB
  double max_buffer_bytes = 1e9; // per kernel buffer (as the CPU device)
  int nap_us = 200;              // idle wait between MPI_Tests (as the executor)
  bool other_splits = true;      // also the exact transfers of the job's other pp/dp splits
};

/// One row of the nccl-tests-style sweep table.
struct SweepRow {
  schedules::OpKind kind = schedules::OpKind::Send;
  int64_t group_size = 2;
  double bytes = 0;           // per rank, as Op::bytes
  std::string type = "float"; // the element type (nccl-tests' names: float, bfloat16)
  int64_t count = 0;          // elements of that type
  double seconds = 0;
  double algbw_bytes_per_s = 0;
  double busbw_bytes_per_s = 0;
  int64_t wrong = 0; // elements that arrived wrong, summed over ranks
};

struct ProbeResult {
  int64_t rank = 0;
  int64_t world = 0;
  schedules::CalibrationTable table; // rank 0 only
  std::vector<SweepRow> sweep;       // rank 0 only
  std::string cluster_toml;          // rank 0 only
  double p2p_latency_s = 0;          // smallest-message one-way time (rank 0)
  double p2p_bandwidth_bytes_per_s = 0;
  /// Compute and communication at once on a rank (backend/probe_overlap.hpp); its
  /// compute slowdown is the cluster description's nccl_compute_slowdown.
  OverlapFacts overlap;
  /// The CPU device's hand-off: idle time between an op's end and the next op's start
  /// on the Compute stream in the kernel replay (median, mean over ranks).
  double hand_off_s = 0;
};

/// The sweeps' largest message when ProbeOptions::max_sweep_bytes is 0: 4 × the
/// schedule's largest message and 2 × the whole model's gradients at 4 B per parameter
/// (a one-stage data-parallel all-reduce of any other split), at least 64 KiB; executed
/// bytes (divided by `shape_divisor`).
double default_sweep_limit(const schedules::Schedule& schedule, int64_t shape_divisor);

/// (kind, group size, executed bytes) of the transfers of the job's other pipeline/data-
/// parallel splits of its world (same tp and cp, every other pp dividing world / (tp·cp);
/// splits the lowering refuses are left out): what `probe` also measures at their exact
/// sizes unless ProbeOptions::other_splits is off.
std::set<std::tuple<int, int64_t, double>> other_split_comms(const schedules::Schedule& schedule,
                                                             int64_t shape_divisor);

/// Runs the probe as this process's rank on ProbeOptions::device (MPI is started here if
/// it is not yet; call finalize_probe() at the end). Throws BackendError when the launch
/// does not match the schedule's world or the device cannot run (no CUDA device or
/// toolkit; FP8 on a GPU without FP8).
ProbeResult probe(const schedules::Schedule& schedule, const ProbeOptions& options);
class ProbeDevice;
/// The same driver on a given device (probe() above makes the one ProbeOptions::device
/// names; a test passes its own).
ProbeResult probe(const schedules::Schedule& schedule, const ProbeOptions& options, ProbeDevice& device);
void finalize_probe();

/// nccl-tests' table of `rows`: a block per collective and group size (rows come
/// grouped), columns size count type redop root time algbw busbw #wrong (out-of-place),
/// each block closed by "# Avg bus bandwidth".
std::string sweep_table(const std::vector<SweepRow>& rows);

} // namespace twinscale::backend
