// The compact binary trace (`.tstrace`, docs/trace-format.md): every op event of every
// rank of a 12,288-rank run in a few GB, where the Chrome JSON would be ~24 GB. The
// ops' static fields (name, kind, stream, labels, group, peer, instance, bytes) are
// stored once per program; per rank, the events are varint-coded integer nanoseconds in
// chunks listed in an index, so a reader seeks to chosen ranks and reads ranks in
// parallel. Written to a temporary file and renamed into place; read errors name the
// file and the offset or rank.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "schedules/interrupt.hpp"
#include "schedules/layout.hpp"
#include "schedules/op.hpp"
#include "schedules/schedule.hpp"
#include "schedules/trace.hpp"

namespace twinscale::schedules {

inline constexpr const char* kBinaryTraceExtension = ".tstrace";
/// The newest version: 2 ends the metadata with each rank's host (Trace::hosts). A trace
/// without hosts is written as version 1, byte for byte as before; both are read.
inline constexpr uint32_t kBinaryTraceVersion = 2;
/// What an event record holds (bit 0: op delta, start delta, duration·2 + failed).
inline constexpr uint32_t kBinaryTraceSchema = 1;

/// True when `path` ends in `.tstrace` (the CLI picks the trace format by extension).
bool is_binary_trace_path(const std::string& path);

/// Where a BinaryTraceWriter sorts, encodes and writes its staged batches: on a thread of
/// its own (the default), or in the thread that records. Both write the same bytes.
enum class TraceWriting { Background, Inline };

/// Streams events into a `.tstrace`: events are staged as they come (`stage_events` at
/// a time), then sorted by rank (stable: a rank's events keep their order) and encoded
/// into per-rank buffers, each appended to the file as a chunk when it reaches
/// kChunkBytes — so a batch touches each rank's buffer once, not once per event (at
/// 12,288 ranks the buffers are 100 MB and each event's append missed the caches). Events
/// of a rank may come in any order (the simulator records them as ops complete); what a
/// rank's chunks hold does not depend on the stage's size, only where they lie in the
/// file. With TraceWriting::Background a full stage is handed to the writer's thread
/// through a queue of at most kQueuedBatches batches (record() waits only when the queue
/// is full), so the recording thread only checks and stages; the batches are encoded in
/// the order they were staged, so the bytes are those of TraceWriting::Inline. A stage
/// holds kStageEventsPerRank events for each rank that records (ranks given another's
/// events by same_events_as record none), at least kMinStageEvents and at most
/// `stage_events`: large enough that a batch touches each rank's buffer for ~85 events,
/// small enough that a run recording a few hundred ranks does not fault in and zero
/// 120 MiB of stages it never fills. Memory is bounded whatever the run's length: world ×
/// chunk, plus (kQueuedBatches + 3) stages (the one filling, the queued ones, the one
/// encoded and its sorted copy; 120 MiB at the defaults with 12,288 ranks recording), or
/// 2 stages inline. The writer's thread blocks SIGINT, SIGTERM and
/// SIGHUP (they reach the recording thread); a write error on it is thrown by the next
/// record() that hands over a batch, or by finish(). Not thread-safe: one thread records.
class BinaryTraceWriter {
public:
  static constexpr size_t kChunkBytes = 8192;
  static constexpr size_t kStageEvents = size_t{1} << 20; // 24 MiB a stage
  static constexpr size_t kStageEventsPerRank = 86;       // 12,288 ranks: kStageEvents, as before
  static constexpr size_t kMinStageEvents = size_t{1} << 16;
  static constexpr size_t kQueuedBatches = 2;

  /// Opens `path`.tmp.<pid>; throws ScheduleError naming `path` when it cannot.
  BinaryTraceWriter(const std::string& path, const Schedule& schedule, const std::string& source,
                    size_t stage_events = kStageEvents, TraceWriting writing = TraceWriting::Background);
  BinaryTraceWriter(const BinaryTraceWriter&) = delete;
  BinaryTraceWriter& operator=(const BinaryTraceWriter&) = delete;
  /// Stops the writer's thread (dropping what it has not written) and removes the
  /// temporary file unless finish() succeeded.
  ~BinaryTraceWriter();

  /// One op of `rank` ran from start_s to end_s (failed: it did not complete). Throws
  /// ScheduleError for a rank or op outside the schedule, or times that are not finite,
  /// negative or past 2^62 ns, and the writer's error (naming the path) once it had one.
  void record(int64_t rank, uint32_t op_index, double start_s, double end_s, bool failed);
  /// `rank`'s events are `of`'s, event for event (a simulation that executed one rank for
  /// both: sim/detail/replica_classes.cpp): `of`'s chunks are written once and indexed for
  /// both, so a reader reads the same events for each. `rank` then records nothing. Throws
  /// ScheduleError for ranks outside the schedule, a rank standing for itself or for a rank
  /// that itself stands for another, ranks of different programs, or a rank already given
  /// another's events or whose events another has; record() then refuses `rank`'s events.
  void same_events_as(int64_t rank, int64_t of);
  /// Each rank's host (Trace::hosts: index = rank), kept in the file (version 2); empty:
  /// none (version 1). Throws ScheduleError when it names more ranks than the schedule.
  void set_hosts(std::vector<std::string> hosts);
  /// Writes the remaining chunks, the metadata and the header, then renames the file
  /// into place. Throws ScheduleError naming the path on an I/O error.
  void finish();
  uint64_t events() const { return events_; }

private:
  struct Chunk {
    uint64_t offset, bytes, events, hash;
  };
  struct RankBuffer {
    std::unique_ptr<uint8_t[]> buf; // kChunkBytes + 32 once used: an event is encoded in place
    size_t used = 0;
    uint64_t events = 0, chunk_events = 0;
    int64_t prev_op = 0, prev_start_ns = 0;
    std::vector<Chunk> chunks;
  };
  struct Staged { // an event as recorded, before it is encoded
    uint32_t rank, op;
    int64_t start_ns;
    uint64_t duration_failed; // duration_ns << 1 | failed
  };
  /// The recording thread's side: `staged_` goes to the writer (inline: drained here).
  void hand_over();
  /// Sets stage_ from the ranks that record (at the first event).
  void size_stage();
  /// The writer's thread: drains the queued batches in order until closed.
  void write_batches();
  /// Joins the writer's thread, after it wrote what is queued (abandon: at once).
  void stop_writer(bool abandon) noexcept;
  void rethrow_writer_error();
  /// Sorts `batch` by rank (counting sort, stable) and encodes it; empties `batch`.
  void drain(std::vector<Staged>& batch);
  void flush(RankBuffer& r);
  /// The metadata before the rank index (docs/trace-format.md): source, layout, names and
  /// every program's ops; the writer's thread encodes it while it waits for its first
  /// batch (into program_meta_), finish() otherwise.
  std::vector<uint8_t> program_meta() const;
  void write(const void* data, size_t bytes);
  [[noreturn]] void fail(const std::string& why);

  std::string path_, tmp_, source_;
  std::vector<std::string> hosts_;
  const Schedule& schedule_;
  std::FILE* file_ = nullptr;
  uint64_t offset_ = 0, events_ = 0;
  std::vector<RankBuffer> ranks_;
  std::vector<uint32_t> ops_of_rank_; // record()'s check, one load
  // by rank (empty until same_events_as): the rank whose events it has, −2 for a rank
  // others have the events of, −1 otherwise
  std::vector<int64_t> same_as_;
  size_t stage_events_;
  size_t stage_ = 0; // this run's stage (0 until the first event: same_events_as may come before it)
  TraceWriting writing_;
  std::vector<Staged> staged_, sorted_;
  std::vector<uint32_t> rank_next_;   // drain's counting sort: each rank's next place in sorted_
  std::vector<uint8_t> program_meta_; // program_meta(), from the writer's thread (empty: not encoded)
  bool finished_ = false;
  std::unique_ptr<TempFileRegistration> temp_registration_; // removed if a signal ends the process
  // The writer's thread; from its start to its join it alone touches file_, offset_,
  // ranks_, sorted_, rank_next_ and program_meta_. The queue, the spare stages, the flags and the error
  // are under mutex_.
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<Staged>> queue_;
  std::vector<std::vector<Staged>> spare_; // drained stages, reused (no 24 MiB allocation a batch)
  bool closing_ = false, abandon_ = false;
  std::exception_ptr error_;
};

/// Writes a whole in-memory trace (the backend's, or the simulator's chosen ranks).
void write_binary_trace(const Trace& trace, const Schedule& schedule, const std::string& path);

/// One event as stored: integer nanoseconds.
struct BinaryTraceEvent {
  uint32_t op_index = 0;
  bool failed = false;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  bool operator==(const BinaryTraceEvent&) const = default;
};

/// Reads a `.tstrace`: the header, metadata and index on construction (validated: magic,
/// version, size, metadata checksum, every index entry inside the file), rank blocks on
/// demand. read_rank is thread-safe (pread), so ranks can be read in parallel.
class BinaryTraceReader {
public:
  /// Throws ScheduleError naming `path` and the offset on a malformed file.
  explicit BinaryTraceReader(const std::string& path);
  BinaryTraceReader(const BinaryTraceReader&) = delete;
  BinaryTraceReader& operator=(const BinaryTraceReader&) = delete;
  ~BinaryTraceReader();

  const std::string& path() const { return path_; }
  const std::string& source() const { return source_; }
  uint32_t version() const { return version_; }
  /// Each rank's host (index = rank, "" where unknown); empty for a version 1 file.
  const std::vector<std::string>& hosts() const { return hosts_; }
  int64_t world() const { return static_cast<int64_t>(program_of_rank_.size()); }
  const Layout& layout() const { return layout_; }
  uint64_t events() const { return events_; }
  uint64_t file_bytes() const { return file_bytes_; }
  const std::vector<std::string>& names() const { return names_; }
  /// The stored programs: only the fields a trace carries are filled (kind, kernel,
  /// stream, group, peer, labels, bytes, flops, name); no dependencies.
  const std::vector<Program>& programs() const { return programs_; }
  /// A communication op's instance (collective) or message (send/recv) number on its
  /// channel (execution rules 2 and 3); 0 for compute ops.
  uint32_t instance(uint32_t program, uint32_t op) const { return instances_[program][op]; }
  uint32_t program_of(int64_t rank) const { return program_of_rank_[static_cast<size_t>(rank)]; }
  uint64_t event_count(int64_t rank) const { return rank_events_[static_cast<size_t>(rank)]; }

  /// The events of `rank` in the order they were recorded (replaces `out`). Throws
  /// ScheduleError naming the file, rank and offset on a corrupted block.
  void read_rank(int64_t rank, std::vector<BinaryTraceEvent>& out) const;
  /// The events of `ranks` as TraceRecords (what read_chrome_trace returns).
  std::vector<TraceRecord> records(const std::vector<int64_t>& ranks) const;
  /// A schedule holding what the file stores (layout, names, programs, ranks'
  /// programs): enough for write_chrome_trace.
  Schedule schedule() const;

private:
  struct Chunk {
    uint64_t offset, bytes, events, hash;
  };
  std::string path_, source_;
  uint32_t version_ = 0;
  std::vector<std::string> hosts_;
  int fd_ = -1;
  Layout layout_;
  uint64_t events_ = 0, file_bytes_ = 0;
  std::vector<std::string> names_;
  std::vector<Program> programs_;
  std::vector<std::vector<uint32_t>> instances_;
  std::vector<uint32_t> program_of_rank_;
  std::vector<uint64_t> rank_events_;
  std::vector<uint64_t> chunk_begin_; // per rank, into chunks_ (size world + 1)
  std::vector<Chunk> chunks_;
};

} // namespace twinscale::schedules
