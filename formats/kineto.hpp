// PyTorch profiler (Kineto) Chrome traces, as torch.profiler's export_chrome_trace writes
// them: one file per rank, GPU kernels as "ph":"X" events of cat "kernel" with pid = the
// device and tid = the CUDA stream, NCCL kernels carrying the collective metadata PyTorch
// records (record_param_comms: "Collective name", "In msg nelems", "Out msg nelems",
// "Group size", "dtype", "Process Group Name", "Process Group Ranks"), and the rank in
// "distributedInfo". Read into the records twinscale's own trace reader returns
// (schedules::TraceRecord), so diagnose, compare and calibrate take either. Documented in
// docs/trace-format.md ("PyTorch profiler traces").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedules/schedule.hpp"
#include "schedules/trace.hpp"

namespace twinscale::formats {

/// What a set of Kineto files (one per rank) holds, as twinscale trace records.
/// Record i of a rank has op_index i: the rank's GPU kernels in start order (memory
/// copies and sets excluded); name = the kernel's name, kind from it (GEMM, attention,
/// optimizer, other compute as elementwise; NCCL kernels as their collective), bytes =
/// the collective's payload from PyTorch's metadata (0 where absent or for compute),
/// labels.iteration = the ProfilerStep the kernel ran in (0 without steps), instance =
/// "<group>#<k>" for the k-th collective of a process group (its ranks where recorded,
/// else its name) and empty without metadata.
struct KinetoTrace {
  std::vector<schedules::TraceRecord> records;
  int64_t world = 0;              // ranks read (distributedInfo.world_size where larger)
  std::string device;             // deviceProperties[0].name, "" when absent
  std::vector<std::string> notes; // what was skipped, and why
};

/// Whether the JSON file `path` is a Kineto trace rather than twinscale's own: its first
/// 64 KiB name no "twinscale-trace" format and hold Kineto's "schemaVersion",
/// "deviceProperties", "distributedInfo" or a "cat": "kernel" event. False for files that
/// cannot be opened (the reader then says why).
bool is_kineto_trace(const std::string& path);

/// Reads one Kineto file per rank. A file's rank is distributedInfo.rank, else its
/// position in `paths`. Throws schedules::ScheduleError naming the file, the event
/// ($.traceEvents[i]) and the field for what cannot be mapped: a kernel event without a
/// name, ts or dur (or not finite, negative), kernels of two devices in one file, a
/// SendRecv kernel whose metadata does not say send, receive or all-to-all, an NCCL
/// kernel of a collective twinscale has no op for (reduce, gather, scatter), a metadata
/// field of the wrong type, two files of one rank, a file without kernels.
KinetoTrace read_kineto_traces(const std::vector<std::string>& paths);

/// The Kineto files of a directory: its regular files ending in ".json", by name.
std::vector<std::string> kineto_files_in(const std::string& dir);

/// A trace of any kind the commands read: twinscale's Chrome JSON, a Kineto file, a
/// directory of Kineto files (one per rank) or several Kineto files.
struct AnyTrace {
  std::vector<schedules::TraceRecord> records;
  std::string source; // "sim", "cpu", "cuda" (twinscale's header), "kineto"
  std::string device; // Kineto: the GPU's name
  bool kineto = false;
  std::vector<std::string> notes;
  std::vector<std::string> hosts; // each rank's host, as a twinscale trace names it (Trace::hosts)
};
AnyTrace read_any_trace(const std::vector<std::string>& paths);

/// Reference records of every op of `schedule` (what aligns a Kineto trace to it):
/// op index, kind, stream, name, labels and bytes; no times.
std::vector<schedules::TraceRecord> schedule_records(const schedules::Schedule& schedule);

/// Maps a Kineto trace onto the ops of a twinscale trace or schedule (`reference`):
/// per rank, the k-th compute kernel is the k-th compute op (compute stream, in op
/// order) and the k-th NCCL kernel of a collective kind the k-th op of that kind (in op
/// order); the records returned carry the reference's op index, kind, stream, name,
/// labels, bytes and instance with the Kineto times. Ops on the data stream (copies,
/// which Kineto lists as memcpy) are not aligned. Throws ScheduleError naming both
/// files and the rank when the counts differ (a PyTorch run launches several kernels
/// for most ops: only traces with one kernel per op align), when a collective's bytes
/// differ from the op's it pairs with, or when the Kineto trace has a rank the
/// reference has not.
std::vector<schedules::TraceRecord> align_kineto(const std::vector<schedules::TraceRecord>& kineto,
                                                 const std::string& kineto_path,
                                                 const std::vector<schedules::TraceRecord>& reference,
                                                 const std::string& reference_path);

} // namespace twinscale::formats
