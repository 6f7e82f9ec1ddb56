// The `.tstrace` writer (docs/trace-format.md, "Binary trace"): events staged by the
// recording thread, sorted by rank, encoded into per-rank chunks and written, by default
// on a thread of the writer's own.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include "schedules/binary_trace.hpp"
#include "schedules/detail/binary_trace_format.hpp"
#include "schedules/error.hpp"
#include "schedules/execution_rules.hpp"
#include "schedules/schedule.hpp"

namespace twinscale::schedules {

using detail::chunk_hash;
using detail::fnv1a;
using detail::Header;
using detail::kMagic;
using detail::kMaxNs;
using detail::put_f64;
using detail::put_varint;
using detail::to_ns;
using detail::zigzag;

namespace {
/// A string as the format writes it: its length, then its bytes.
void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put_varint(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

std::string write_cause(int err) {
  return err == ENOSPC || err == EDQUOT || err == EFBIG ? std::string("disk full (") + std::strerror(err) + ")"
                                                        : std::strerror(err);
}
} // namespace

BinaryTraceWriter::BinaryTraceWriter(const std::string& path, const Schedule& schedule, const std::string& source,
                                     size_t stage_events, TraceWriting writing)
    : path_(path), tmp_(path + ".tmp." + std::to_string(::getpid())), source_(source), schedule_(schedule),
      stage_events_(std::clamp<size_t>(stage_events, 1, size_t{1} << 31)), writing_(writing) {
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw ScheduleError(path_ + ": a binary trace is written to a regular file (it is renamed into place and seeks "
                                "back to its header), not a directory, device or FIFO");
  temp_registration_ = std::make_unique<TempFileRegistration>(tmp_);
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (file_ == nullptr)
    throw ScheduleError(path_ + ": cannot write (cannot create " + tmp_ + ": " + std::strerror(errno) + ")");
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  ranks_.resize(static_cast<size_t>(schedule.world()));
  ops_of_rank_.resize(ranks_.size());
  for (size_t rank = 0; rank < ranks_.size(); ++rank)
    ops_of_rank_[rank] = static_cast<uint32_t>(schedule.program(static_cast<int64_t>(rank)).ops.size());
  rank_next_.resize(ranks_.size());
  const Header zero{};
  write(&zero, sizeof zero);
}

BinaryTraceWriter::~BinaryTraceWriter() {
  stop_writer(true);
  if (file_ != nullptr) std::fclose(file_);
  if (!finished_) std::remove(tmp_.c_str());
}

void BinaryTraceWriter::fail(const std::string& why) {
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
  std::remove(tmp_.c_str());
  throw ScheduleError(path_ + ": " + why);
}

void BinaryTraceWriter::write(const void* data, size_t bytes) {
  if (file_ == nullptr) fail("write failed: the file was closed by an earlier error");
  if (std::fwrite(data, 1, bytes, file_) != bytes) fail("write failed: " + write_cause(errno));
  offset_ += bytes;
}

void BinaryTraceWriter::same_events_as(int64_t rank, int64_t of) {
  const auto world = static_cast<int64_t>(ranks_.size());
  auto refuse = [&](const std::string& why) {
    throw ScheduleError(path_ + ": rank " + std::to_string(rank) + " given the events of rank " + std::to_string(of) +
                        ": " + why);
  };
  if (finished_) refuse("the trace was finished");
  if (rank < 0 || rank >= world || of < 0 || of >= world)
    refuse("the schedule has ranks 0.." + std::to_string(world - 1));
  if (same_as_.empty()) same_as_.assign(ranks_.size(), -1);
  const auto r = static_cast<size_t>(rank), o = static_cast<size_t>(of);
  if (rank == of || same_as_[o] >= 0) refuse("a rank stands for itself or for a rank that has another's events");
  if (same_as_[r] != -1) refuse("it already has another's events, or another rank has its events");
  if (schedule_.program_of_rank[r] != schedule_.program_of_rank[o]) refuse("they run different programs");
  same_as_[r] = of;
  same_as_[o] = -2; // a rank others have the events of
}

void BinaryTraceWriter::record(int64_t rank, uint32_t op_index, double start_s, double end_s, bool failed) {
  if (finished_) throw ScheduleError(path_ + ": event recorded after the trace was finished");
  if (rank < 0 || rank >= static_cast<int64_t>(ranks_.size()))
    throw ScheduleError(path_ + ": trace event for rank " + std::to_string(rank) + " but the schedule has " +
                        std::to_string(ranks_.size()) + " ranks");
  if (!same_as_.empty() && same_as_[static_cast<size_t>(rank)] >= 0)
    throw ScheduleError(path_ + ": trace event for rank " + std::to_string(rank) + ", which has the events of rank " +
                        std::to_string(same_as_[static_cast<size_t>(rank)]));
  if (op_index >= ops_of_rank_[static_cast<size_t>(rank)])
    throw ScheduleError(path_ + ": trace event for rank " + std::to_string(rank) + " op " + std::to_string(op_index) +
                        " but its program has " + std::to_string(ops_of_rank_[static_cast<size_t>(rank)]) + " ops");
  if (!(start_s >= 0) || !(end_s >= start_s) || !(end_s * 1e9 < static_cast<double>(kMaxNs)))
    throw ScheduleError(path_ + ": rank " + std::to_string(rank) + " op " + std::to_string(op_index) + ": times " +
                        std::to_string(start_s) + " to " + std::to_string(end_s) +
                        " s (valid: finite, 0 ≤ start ≤ end < 2^62 ns)");
  const int64_t start = to_ns(start_s);
  const int64_t dur = std::max<int64_t>(0, to_ns(end_s - start_s));
  if (stage_ == 0) [[unlikely]]
    size_stage();
  staged_.push_back(
      {static_cast<uint32_t>(rank), op_index, start, static_cast<uint64_t>(dur) << 1 | (failed ? 1u : 0u)});
  ++events_;
  if (staged_.size() >= stage_) hand_over();
}

void BinaryTraceWriter::size_stage() {
  size_t recording = ranks_.size();
  for (int64_t of : same_as_) recording -= of >= 0 ? 1 : 0;
  stage_ = std::min(stage_events_, std::max(kMinStageEvents, recording * kStageEventsPerRank));
  staged_.reserve(stage_); // filled in place: no doubling, no copies
}

void BinaryTraceWriter::hand_over() {
  rethrow_writer_error();
  if (writing_ == TraceWriting::Background && !thread_.joinable()) {
    try {
      const SignalBlock blocked; // the thread starts with the signals blocked: they reach the recording thread
      thread_ = std::thread([this] { write_batches(); });
    } catch (const std::system_error&) {
      writing_ = TraceWriting::Inline; // no thread to be had: the same bytes, written here
    }
  }
  if (writing_ == TraceWriting::Inline) {
    drain(staged_);
    return;
  }
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return queue_.size() < kQueuedBatches || error_ != nullptr; });
  if (error_ != nullptr) {
    lock.unlock();
    rethrow_writer_error();
  }
  queue_.push_back(std::move(staged_));
  staged_ = std::vector<Staged>();
  if (!spare_.empty()) {
    staged_.swap(spare_.back());
    spare_.pop_back();
  }
  lock.unlock();
  changed_.notify_all();
  staged_.reserve(stage_); // a stage not drained before: the room for a whole one
}

void BinaryTraceWriter::write_batches() {
  // the metadata of the programs first: the thread is idle until the queue holds a
  // second batch, and finish() then only adds the index
  try {
    program_meta_ = program_meta();
  } catch (...) { // allocation failure: finish() encodes it again, and reports any error
    program_meta_.clear();
  }
  std::vector<Staged> batch;
  for (;;) {
    std::unique_lock lock(mutex_);
    if (batch.capacity() != 0) spare_.push_back(std::move(batch));
    batch = std::vector<Staged>();
    changed_.wait(lock, [this] { return !queue_.empty() || closing_; });
    if (abandon_ || queue_.empty()) return;
    batch = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    changed_.notify_all(); // room in the queue
    try {
      drain(batch);
    } catch (...) { // fail() closed and removed the file; the recording thread throws it
      lock.lock();
      error_ = std::current_exception();
      queue_.clear();
      lock.unlock();
      changed_.notify_all();
      return;
    }
  }
}

void BinaryTraceWriter::stop_writer(bool abandon) noexcept {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    closing_ = true;
    abandon_ = abandon_ || abandon;
  }
  changed_.notify_all();
  thread_.join();
}

void BinaryTraceWriter::rethrow_writer_error() {
  std::exception_ptr error;
  {
    const std::lock_guard lock(mutex_);
    error = error_;
  }
  if (error == nullptr) return;
  stop_writer(true);
  std::rethrow_exception(error);
}

void BinaryTraceWriter::drain(std::vector<Staged>& batch) {
  if (batch.empty()) return;
  std::fill(rank_next_.begin(), rank_next_.end(), 0);
  for (const Staged& e : batch) ++rank_next_[e.rank];
  uint32_t at = 0;
  for (uint32_t& n : rank_next_) at += std::exchange(n, at);
  sorted_.resize(batch.size());
  for (const Staged& e : batch) sorted_[rank_next_[e.rank]++] = e;
  batch.clear();
  for (const Staged& e : sorted_) {
    RankBuffer& r = ranks_[e.rank];
    if (r.buf == nullptr) r.buf = std::make_unique_for_overwrite<uint8_t[]>(kChunkBytes + 32);
    uint8_t* p = put_varint(r.buf.get() + r.used, zigzag(static_cast<int64_t>(e.op) - r.prev_op)); // ≤ 30 bytes
    p = put_varint(p, zigzag(e.start_ns - r.prev_start_ns));
    p = put_varint(p, e.duration_failed);
    r.used = static_cast<size_t>(p - r.buf.get());
    r.prev_op = e.op;
    r.prev_start_ns = e.start_ns;
    ++r.events;
    ++r.chunk_events;
    if (r.used >= kChunkBytes) flush(r); // a chunk ends past kChunkBytes, before + 32
  }
}

void BinaryTraceWriter::flush(RankBuffer& r) {
  if (r.used == 0) return;
  r.chunks.push_back(Chunk{offset_, r.used, r.chunk_events, chunk_hash(r.buf.get(), r.used)});
  write(r.buf.get(), r.used);
  r.used = 0;
  r.chunk_events = 0;
  r.prev_op = 0;
  r.prev_start_ns = 0;
}

void BinaryTraceWriter::set_hosts(std::vector<std::string> hosts) {
  if (hosts.size() > ranks_.size()) {
    stop_writer(true); // fail() closes the file the writer's thread writes
    fail("hosts of " + std::to_string(hosts.size()) + " ranks given for a schedule of " +
         std::to_string(ranks_.size()));
  }
  hosts_ = std::move(hosts);
}

/// The metadata up to the rank index: the source, the layout, the names and every
/// program's ops (docs/trace-format.md); a function of the schedule alone.
std::vector<uint8_t> BinaryTraceWriter::program_meta() const {
  std::vector<uint8_t> meta;
  size_t ops = 0;
  for (const Program& prog : schedule_.programs) ops += prog.ops.size();
  meta.reserve(64 + 32 * schedule_.names.size() + 40 * ops);
  put_string(meta, source_);
  const Layout& L = schedule_.layout;
  for (int64_t v : {L.tp, L.dp, L.pp, L.ep, L.cp}) put_varint(meta, static_cast<uint64_t>(v));
  put_varint(meta, schedule_.names.size());
  for (const std::string& n : schedule_.names) put_string(meta, n);
  put_varint(meta, schedule_.programs.size());
  for (size_t p = 0; p < schedule_.programs.size(); ++p) {
    const Program& prog = schedule_.programs[p];
    const ProgramIndex index(prog, p);
    put_varint(meta, prog.ops.size());
    for (uint32_t i = 0; i < prog.ops.size(); ++i) {
      const Op& op = prog.ops[i];
      put_varint(meta, op.name);
      for (auto b : {static_cast<uint8_t>(op.kind), static_cast<uint8_t>(op.kernel), static_cast<uint8_t>(op.stream),
                     static_cast<uint8_t>(op.group), static_cast<uint8_t>(op.labels.phase)})
        meta.push_back(b);
      for (int32_t v : {op.labels.iteration, op.labels.micro_batch, op.labels.chunk, op.labels.layer, op.peer})
        put_varint(meta, zigzag(v));
      put_varint(meta, op.is_communication() ? index.sequence(i) : 0);
      put_f64(meta, op.bytes);
      put_f64(meta, op.flops);
    }
  }
  return meta;
}

void BinaryTraceWriter::finish() {
  if (finished_) return;
  rethrow_writer_error();
  if (thread_.joinable()) {
    if (!staged_.empty()) hand_over();
    stop_writer(false); // after it wrote every queued batch
    rethrow_writer_error();
  } else {
    drain(staged_);
  }
  for (RankBuffer& r : ranks_) {
    flush(r);
    r.buf.reset();
  }
  // each rank's chunk list, encoded once: a rank given another's events is indexed with
  // the same bytes (the chunks of the rank it has the events of)
  std::vector<uint8_t> lists;
  std::vector<std::pair<size_t, size_t>> list_at(ranks_.size()); // (begin, end) in lists
  for (size_t rank = 0; rank < ranks_.size(); ++rank) {
    if (!same_as_.empty() && same_as_[rank] >= 0) continue;
    const RankBuffer& r = ranks_[rank];
    list_at[rank].first = lists.size();
    put_varint(lists, r.chunks.size());
    for (const Chunk& c : r.chunks) {
      put_varint(lists, c.offset);
      put_varint(lists, c.bytes);
      put_varint(lists, c.events);
      for (int b = 0; b < 8; ++b) lists.push_back(static_cast<uint8_t>(c.hash >> (8 * b)));
    }
    list_at[rank].second = lists.size();
  }
  std::vector<uint8_t> meta = program_meta_.empty() ? program_meta() : std::move(program_meta_);
  program_meta_.clear();
  size_t index_bytes = 0;
  for (size_t rank = 0; rank < ranks_.size(); ++rank) {
    const size_t of = same_as_.empty() || same_as_[rank] < 0 ? rank : static_cast<size_t>(same_as_[rank]);
    index_bytes += 5 + list_at[of].second - list_at[of].first;
  }
  meta.reserve(meta.size() + index_bytes + 16 * hosts_.size());
  for (size_t rank = 0; rank < ranks_.size(); ++rank) {
    size_t of = rank;
    if (!same_as_.empty() && same_as_[rank] >= 0) { // indexed with the chunks of the rank it has the events of
      of = static_cast<size_t>(same_as_[rank]);
      events_ += ranks_[of].events - ranks_[rank].events; // what it recorded before is no longer indexed
    }
    put_varint(meta, schedule_.program_of_rank[rank]);
    meta.insert(meta.end(), lists.begin() + static_cast<std::ptrdiff_t>(list_at[of].first),
                lists.begin() + static_cast<std::ptrdiff_t>(list_at[of].second));
  }
  const bool hosts = std::any_of(hosts_.begin(), hosts_.end(), [](const std::string& x) { return !x.empty(); });
  if (hosts) { // version 2: one host string per rank ("" where unknown)
    for (size_t rank = 0; rank < ranks_.size(); ++rank) put_string(meta, rank < hosts_.size() ? hosts_[rank] : "");
  }
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = hosts ? 2 : 1;
  h.schema = kBinaryTraceSchema;
  h.world = ranks_.size();
  h.meta_offset = offset_;
  h.meta_bytes = meta.size();
  h.file_bytes = offset_ + meta.size();
  h.meta_hash = fnv1a(meta.data(), meta.size());
  h.events = events_;
  write(meta.data(), meta.size());
  if (std::fseek(file_, 0, SEEK_SET) != 0) fail("cannot seek to the header");
  if (std::fwrite(&h, 1, sizeof h, file_) != sizeof h) fail("write failed: " + write_cause(errno));
  const bool ok = std::fflush(file_) == 0 && std::ferror(file_) == 0;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok || !closed) fail("write failed: " + write_cause(errno));
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) fail("cannot rename " + tmp_ + " into place");
  finished_ = true;
}

void write_binary_trace(const Trace& trace, const Schedule& schedule, const std::string& path) {
  BinaryTraceWriter w(path, schedule, trace.source);
  w.set_hosts(trace.hosts);
  for (const TraceEvent& e : trace.events) w.record(e.rank, e.op_index, e.start_s, e.end_s, e.failed);
  w.finish();
}

} // namespace twinscale::schedules
