// The trace format shared by sim/ and backend/: Chrome trace-event JSON (opens in
// Perfetto). pid = rank, tid = stream, ts/dur in microseconds; args carry the op index,
// its labels, bytes and peer. Documented in docs/trace-format.md.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "schedules/op.hpp"

namespace twinscale::schedules {

struct Schedule;

struct TraceEvent {
  int64_t rank = 0;
  uint32_t op_index = 0; // index in the rank's program
  double start_s = 0;
  double end_s = 0;
  bool failed = false; // the op did not complete (fault); end_s = when it failed
};

struct Trace {
  std::string source; // "sim", "cuda", "cpu"
  std::vector<TraceEvent> events;
};

/// Writes the Chrome trace-event JSON for `trace`; op kind, stream, labels, bytes,
/// peer and a communication op's instance (TraceRecord::instance) are looked up in
/// `schedule`.
void write_chrome_trace(const Trace& trace, const Schedule& schedule, std::ostream& out);

/// One op as read back from a trace file (self-contained: no schedule needed).
struct TraceRecord {
  int64_t rank = 0;
  uint32_t op_index = 0;
  Stream stream = Stream::Compute;
  OpKind kind = OpKind::Gemm;
  std::string name;
  OpLabels labels;
  double start_s = 0;
  double duration_s = 0;
  double bytes = 0;
  bool failed = false;
  /// Communication ops: the instance they take part in, the same string on every op of
  /// it and on no other (execution rules 2 and 3, schedules/execution_rules.hpp):
  /// "dp@0#3" is instance 3 of the dp collectives of the group whose first member is
  /// rank 0 ("dp/p1@0#3": priority class 1), "pp:4>5#2" the third message from rank 4 to
  /// rank 5 on their pp group (the send and its receive). Empty for compute ops and in
  /// traces written before it existed.
  std::string instance;
};

/// Reads a trace written by write_chrome_trace. Throws ScheduleError naming `path`
/// and the event on malformed input.
/// Validates ranges (pid a rank, op an index, ts and dur finite and ≥ 0, integers exact)
/// and uniqueness (one event per rank and op).
std::vector<TraceRecord> read_chrome_trace(std::istream& in, const std::string& path);

/// read_chrome_trace of the file `path` (a regular file within the JSON limits of
/// schedules/input_file.hpp); ScheduleError otherwise.
std::vector<TraceRecord> read_chrome_trace_file(const std::string& path);

} // namespace twinscale::schedules
