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
  /// The host of each rank (index = rank) as the run names it: the simulator its server
  /// (topology::Fabric::server_name, "server3"), a real run its hostname. Empty, or ""
  /// for a rank, when unknown (traces written before hosts were recorded).
  std::vector<std::string> hosts;
};

/// Writes the Chrome trace-event JSON for `trace`; op kind, stream, labels, bytes,
/// peer and a communication op's instance (TraceRecord::instance) are looked up in
/// `schedule`. A rank with a known host is named "rank N (HOST)" in its process_name
/// metadata event, which also carries args.host.
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
/// and uniqueness (one event per rank and op). With `hosts`, fills it with the host of
/// each rank that the process_name events name (Trace::hosts: index = rank, "" where
/// none; empty when the trace names no host, as one written before hosts were).
std::vector<TraceRecord> read_chrome_trace(std::istream& in, const std::string& path,
                                           std::vector<std::string>* hosts = nullptr);

/// read_chrome_trace of the file `path` (a regular file within the JSON limits of
/// schedules/input_file.hpp); ScheduleError otherwise.
std::vector<TraceRecord> read_chrome_trace_file(const std::string& path, std::vector<std::string>* hosts = nullptr);

} // namespace twinscale::schedules
