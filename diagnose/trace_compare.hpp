// Comparing two traces of one schedule (e.g. simulated vs real) op by op, and turning a
// real trace into the calibration table the simulator reads (schedules/calibration.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedules/calibration.hpp"
#include "schedules/schedule.hpp"
#include "schedules/trace.hpp"

namespace twinscale::diagnose {

/// Error of B against A for one op kind: times of ops present (and not failed) in both
/// traces, aligned by (rank, op index); rel = (B − A) / A. An op's time is its duration,
/// except a collective's when both traces name its instance (TraceRecord::instance):
/// then its instance's time, last member's end − last member's start (the transfer once
/// every member has issued it, as the probe measures it and the simulator models it, all
/// members ending together; waiting for a late peer is the schedule's and shows in the
/// spans). `waits_excluded` says which.
struct KindError {
  std::string kind;
  int64_t ops = 0;
  double a_mean_s = 0;
  double b_mean_s = 0;
  double mean_rel_error = 0; // signed: B slower than A is positive
  double median_abs_rel_error = 0;
  double max_abs_rel_error = 0;
  bool waits_excluded = false;        // collectives timed as their instance (last end − last start)
  double op_median_abs_rel_error = 0; // the same from the ops' own durations (waits included)
};

/// Per rank: time from its first op's start to its last op's end, in each trace.
struct RankError {
  int64_t rank = 0;
  int64_t ops = 0;
  double a_span_s = 0;
  double b_span_s = 0;
  double rel_error = 0;
};

struct TraceComparison {
  int64_t matched = 0;
  int64_t only_a = 0; // in A (or failed in B) but not comparable
  int64_t only_b = 0;
  double a_span_s = 0; // whole trace: last end − first start
  double b_span_s = 0;
  std::vector<KindError> kinds; // sorted by kind name
  std::vector<RankError> ranks; // sorted by rank
};

/// Aligns by (rank, op index). Throws ScheduleError naming both files and the op when
/// an aligned pair disagrees on op kind or name (the traces are of different schedules).
TraceComparison compare_traces(const std::vector<schedules::TraceRecord>& a, const std::string& a_path,
                               const std::vector<schedules::TraceRecord>& b, const std::string& b_path);

/// The "source" field of a trace file ("sim", "cpu", "cuda"), read from its header;
/// empty when absent.
std::string trace_source(const std::string& path);

/// Calibration from a real trace of `schedule`: compute ops → kernel timings at the
/// executed shape (the CPU device runs shapes divided by `shape_divisor` in fp32; the
/// CUDA device runs the scheduled shapes and dtypes), communication ops → achieved
/// bandwidths by kind, group size and bytes (a collective timed as its instance, last
/// end − last start, as compare_traces times it). Throws ScheduleError naming `path` and the
/// event when it does not belong to `schedule`.
schedules::CalibrationTable calibrate_from_trace(const std::vector<schedules::TraceRecord>& trace,
                                                 const std::string& path, const schedules::Schedule& schedule,
                                                 const std::string& source, const std::string& device,
                                                 int64_t shape_divisor);

} // namespace twinscale::diagnose
