// The `.tstrace` reader (docs/trace-format.md, "Binary trace"); the writer is in
// binary_trace_writer.cpp.
#include "schedules/binary_trace.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <utility>

#include "schedules/detail/binary_trace_format.hpp"
#include "schedules/error.hpp"
#include "schedules/limits.hpp"
#include "schedules/schedule.hpp"

namespace twinscale::schedules {

namespace {

using namespace detail;

/// Reads the metadata section, naming the file and the offset of what is wrong.
class MetaReader {
public:
  MetaReader(const std::string& path, const std::vector<uint8_t>& bytes, uint64_t base)
      : path_(path), begin_(bytes.data()), p_(bytes.data()), end_(bytes.data() + bytes.size()), base_(base) {}
  [[noreturn]] void bad(const std::string& why) const {
    throw ScheduleError(path_ + ": offset " + std::to_string(base_ + static_cast<uint64_t>(p_ - begin_)) +
                        ": corrupted trace metadata: " + why);
  }
  uint64_t varint(const char* what, uint64_t max) {
    uint64_t v = 0;
    if (!get_varint(p_, end_, v)) bad(std::string("truncated or overlong integer (") + what + ")");
    if (v > max) bad(std::string(what) + " " + std::to_string(v) + " exceeds " + std::to_string(max));
    return v;
  }
  int32_t label(const char* what) {
    const int64_t v = unzigzag(varint(what, ~uint64_t{0}));
    if (v < INT32_MIN || v > INT32_MAX) bad(std::string(what) + " " + std::to_string(v) + " is not a 32-bit label");
    return static_cast<int32_t>(v);
  }
  uint8_t byte(const char* what, uint8_t max) {
    if (p_ >= end_) bad(std::string("truncated (") + what + ")");
    const uint8_t v = *p_++;
    if (v > max) bad(std::string(what) + " " + std::to_string(v) + " is out of range (0.." + std::to_string(max) + ")");
    return v;
  }
  uint64_t u64(const char* what) {
    if (end_ - p_ < 8) bad(std::string("truncated (") + what + ")");
    uint64_t v = 0;
    for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(p_[b]) << (8 * b);
    p_ += 8;
    return v;
  }
  double f64(const char* what) {
    if (end_ - p_ < 8) bad(std::string("truncated (") + what + ")");
    double v = 0;
    std::memcpy(&v, p_, 8);
    p_ += 8;
    if (!std::isfinite(v) || v < 0) bad(std::string(what) + " must be finite and ≥ 0");
    return v;
  }
  std::string string(const char* what) {
    const uint64_t n = varint(what, remaining());
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  /// A count of items of at least `min_bytes` each: never more than the bytes left.
  uint64_t count(const char* what, uint64_t min_bytes, uint64_t max) {
    return varint(what, std::min(max, remaining() / std::max<uint64_t>(1, min_bytes)));
  }
  uint64_t remaining() const { return static_cast<uint64_t>(end_ - p_); }

private:
  std::string path_;
  const uint8_t *begin_, *p_, *end_;
  uint64_t base_;
};

} // namespace

bool is_binary_trace_path(const std::string& path) {
  const std::string ext = kBinaryTraceExtension;
  return path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

// ---- reader ---------------------------------------------------------------------------

namespace {

void pread_all(int fd, void* buf, uint64_t bytes, uint64_t offset, const std::string& path) {
  auto* p = static_cast<uint8_t*>(buf);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw ScheduleError(path + ": offset " + std::to_string(offset) + ": read failed (" +
                          (n == 0 ? std::string("unexpected end of file") : std::string(std::strerror(errno))) + ")");
    p += n;
    bytes -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

/// One program of the metadata (the fields a trace carries) and its ops' instance
/// numbers; `names` entries in the name table.
void read_program(MetaReader& m, size_t names, Program& prog, std::vector<uint32_t>& instances) {
  prog.ops.resize(m.count("op count", 28, static_cast<uint64_t>(kMaxOpsPerProgram)));
  instances.resize(prog.ops.size());
  for (size_t i = 0; i < prog.ops.size(); ++i) {
    Op& op = prog.ops[i];
    op.name = static_cast<uint32_t>(m.varint("op name", names == 0 ? 0 : names - 1));
    if (names == 0) m.bad("an op names an entry of an empty name table");
    op.kind = static_cast<OpKind>(m.byte("op kind", static_cast<uint8_t>(OpKind::Recv)));
    op.kernel = static_cast<Kernel>(m.byte("kernel", static_cast<uint8_t>(kLastKernel)));
    op.stream = static_cast<Stream>(m.byte("stream", kStreamCount - 1));
    op.group = static_cast<GroupKind>(m.byte("group", kGroupKindCount - 1));
    op.labels.phase = static_cast<Phase>(m.byte("phase", static_cast<uint8_t>(Phase::Data)));
    op.labels.iteration = m.label("iteration");
    op.labels.micro_batch = m.label("micro_batch");
    op.labels.chunk = m.label("chunk");
    op.labels.layer = m.label("layer");
    op.peer = m.label("peer");
    instances[i] = static_cast<uint32_t>(m.varint("instance", UINT32_MAX));
    op.bytes = m.f64("bytes");
    op.flops = m.f64("flops");
  }
}

} // namespace

BinaryTraceReader::BinaryTraceReader(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw ScheduleError(path + ": cannot open (" + std::strerror(errno) + ")");
  const off_t size = ::lseek(fd_, 0, SEEK_END);
  Header h{};
  auto bad = [&](uint64_t offset, const std::string& why) {
    ::close(fd_);
    fd_ = -1;
    throw ScheduleError(path + ": offset " + std::to_string(offset) + ": " + why);
  };
  if (size < static_cast<off_t>(kHeaderBytes))
    bad(0, "not a twinscale binary trace (" + std::to_string(size) + " bytes, shorter than the 64-byte header)");
  pread_all(fd_, &h, sizeof h, 0, path);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) bad(0, "not a twinscale binary trace (bad magic number)");
  if (h.version < 1 || h.version > kBinaryTraceVersion)
    bad(8, "unsupported version " + std::to_string(h.version) + " (this reader: 1 to " +
               std::to_string(kBinaryTraceVersion) + ")");
  version_ = h.version;
  if (h.schema != kBinaryTraceSchema)
    bad(12, "unsupported event schema " + std::to_string(h.schema) +
                " (this reader: " + std::to_string(kBinaryTraceSchema) + ")");
  if (h.file_bytes != static_cast<uint64_t>(size))
    bad(static_cast<uint64_t>(size), "truncated or extended: the file has " + std::to_string(size) +
                                         " bytes, its header says " + std::to_string(h.file_bytes));
  if (h.world == 0 || h.world > static_cast<uint64_t>(kMaxRanks))
    bad(16, "rank count " + std::to_string(h.world) + " outside 1.." + std::to_string(kMaxRanks));
  if (h.meta_offset < kHeaderBytes || h.meta_offset > h.file_bytes || h.meta_bytes != h.file_bytes - h.meta_offset)
    bad(24, "metadata at " + std::to_string(h.meta_offset) + " (+" + std::to_string(h.meta_bytes) +
                " bytes) does not end the file");
  file_bytes_ = h.file_bytes;
  events_ = h.events;
  std::vector<uint8_t> meta(h.meta_bytes);
  pread_all(fd_, meta.data(), meta.size(), h.meta_offset, path);
  if (fnv1a(meta.data(), meta.size()) != h.meta_hash) bad(h.meta_offset, "corrupted metadata (checksum mismatch)");
  try {
    MetaReader m(path, meta, h.meta_offset);
    source_ = m.string("source");
    int64_t* dims[] = {&layout_.tp, &layout_.dp, &layout_.pp, &layout_.ep, &layout_.cp};
    for (int64_t* d : dims) *d = static_cast<int64_t>(m.varint("layout size", static_cast<uint64_t>(kMaxRanks)));
    if (layout_.tp < 1 || layout_.dp < 1 || layout_.pp < 1 || layout_.world() != static_cast<int64_t>(h.world))
      m.bad("layout tp " + std::to_string(layout_.tp) + " × dp " + std::to_string(layout_.dp) + " × pp " +
            std::to_string(layout_.pp) + " does not have the header's " + std::to_string(h.world) + " ranks");
    names_.resize(m.count("name count", 1, ~uint64_t{0}));
    for (std::string& n : names_) n = m.string("name");
    programs_.resize(m.count("program count", 1, static_cast<uint64_t>(kMaxRanks)));
    instances_.resize(programs_.size());
    for (size_t p = 0; p < programs_.size(); ++p) read_program(m, names_.size(), programs_[p], instances_[p]);
    program_of_rank_.resize(h.world);
    rank_events_.assign(h.world, 0);
    chunk_begin_.assign(h.world + 1, 0);
    for (uint64_t rank = 0; rank < h.world; ++rank) {
      program_of_rank_[rank] = static_cast<uint32_t>(m.varint("program of a rank", programs_.size() - 1));
      const uint64_t n = m.count("chunk count", 11, ~uint64_t{0});
      chunk_begin_[rank] = chunks_.size();
      for (uint64_t c = 0; c < n; ++c) {
        Chunk ch{};
        ch.offset = m.varint("chunk offset", h.meta_offset);
        ch.bytes = m.varint("chunk bytes", h.meta_offset);
        ch.events = m.varint("chunk events", ch.bytes / 3);
        ch.hash = m.u64("chunk check");
        if (ch.offset < kHeaderBytes || ch.offset + ch.bytes > h.meta_offset || ch.events == 0)
          m.bad("rank " + std::to_string(rank) + " chunk " + std::to_string(c) + " at " + std::to_string(ch.offset) +
                " (+" + std::to_string(ch.bytes) + " bytes, " + std::to_string(ch.events) +
                " events) is outside the event area 64.." + std::to_string(h.meta_offset));
        rank_events_[rank] += ch.events;
        chunks_.push_back(ch);
      }
      if (rank_events_[rank] > programs_[program_of_rank_[rank]].ops.size())
        m.bad("rank " + std::to_string(rank) + " has " + std::to_string(rank_events_[rank]) +
              " events but its program has " + std::to_string(programs_[program_of_rank_[rank]].ops.size()) + " ops");
    }
    chunk_begin_[h.world] = chunks_.size();
    uint64_t total = 0;
    for (uint64_t e : rank_events_) total += e;
    if (total != h.events)
      m.bad("the rank index holds " + std::to_string(total) + " events, the header says " + std::to_string(h.events));
    if (h.version >= 2) {
      hosts_.resize(h.world);
      for (std::string& host : hosts_) host = m.string("host");
    }
    if (m.remaining() != 0) m.bad(std::to_string(m.remaining()) + " unexpected bytes after the rank index");
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

BinaryTraceReader::~BinaryTraceReader() {
  if (fd_ >= 0) ::close(fd_);
}

void BinaryTraceReader::read_rank(int64_t rank, std::vector<BinaryTraceEvent>& out) const {
  if (rank < 0 || rank >= world())
    throw ScheduleError(path_ + ": rank " + std::to_string(rank) + " outside the trace's 0.." +
                        std::to_string(world() - 1));
  out.clear();
  out.reserve(rank_events_[static_cast<size_t>(rank)]);
  const size_t ops = programs_[program_of_rank_[static_cast<size_t>(rank)]].ops.size();
  std::vector<bool> seen(ops, false);
  thread_local std::vector<uint8_t> buf;
  for (uint64_t c = chunk_begin_[static_cast<size_t>(rank)]; c < chunk_begin_[static_cast<size_t>(rank) + 1]; ++c) {
    const Chunk& ch = chunks_[c];
    buf.resize(ch.bytes);
    pread_all(fd_, buf.data(), ch.bytes, ch.offset, path_);
    if (chunk_hash(buf.data(), buf.size()) != ch.hash)
      throw ScheduleError(path_ + ": offset " + std::to_string(ch.offset) + ": rank " + std::to_string(rank) +
                          ": corrupted event chunk (" + std::to_string(ch.bytes) + " bytes, checksum mismatch)");
    const uint8_t *p = buf.data(), *end = buf.data() + buf.size();
    int64_t op = 0, start = 0;
    for (uint64_t e = 0; e < ch.events; ++e) {
      const uint8_t* at = p;
      auto bad = [&](const std::string& why) {
        throw ScheduleError(path_ + ": offset " + std::to_string(ch.offset + static_cast<uint64_t>(at - buf.data())) +
                            ": rank " + std::to_string(rank) + " event " + std::to_string(out.size()) + ": " + why);
      };
      uint64_t d_op = 0, d_start = 0, dur = 0;
      if (!get_varint(p, end, d_op) || !get_varint(p, end, d_start) || !get_varint(p, end, dur))
        bad("truncated or overlong event");
      op += unzigzag(d_op);
      start += unzigzag(d_start);
      if (op < 0 || static_cast<uint64_t>(op) >= ops)
        bad("op " + std::to_string(op) + " outside its program's 0.." + std::to_string(ops - 1));
      if (seen[static_cast<size_t>(op)]) bad("duplicate event for op " + std::to_string(op));
      seen[static_cast<size_t>(op)] = true;
      if (start < 0 || start >= kMaxNs) bad("start " + std::to_string(start) + " ns outside 0..2^62");
      if ((dur >> 1) >= static_cast<uint64_t>(kMaxNs) - static_cast<uint64_t>(start))
        bad("duration " + std::to_string(dur >> 1) + " ns ends past 2^62 ns");
      out.push_back(BinaryTraceEvent{static_cast<uint32_t>(op), (dur & 1) != 0, start, static_cast<int64_t>(dur >> 1)});
    }
    if (p != end)
      throw ScheduleError(path_ + ": offset " + std::to_string(ch.offset + static_cast<uint64_t>(p - buf.data())) +
                          ": rank " + std::to_string(rank) + ": " + std::to_string(end - p) +
                          " unexpected bytes after the chunk's events");
  }
}

std::vector<TraceRecord> BinaryTraceReader::records(const std::vector<int64_t>& ranks) const {
  std::vector<TraceRecord> out;
  std::vector<BinaryTraceEvent> events;
  for (int64_t rank : ranks) {
    read_rank(rank, events);
    const Program& prog = programs_[program_of(rank)];
    for (const BinaryTraceEvent& e : events) {
      const Op& op = prog.ops[e.op_index];
      TraceRecord r;
      r.rank = rank;
      r.op_index = e.op_index;
      r.stream = op.stream;
      r.kind = op.kind;
      r.name = names_[op.name];
      r.labels = op.labels;
      r.start_s = static_cast<double>(e.start_ns) * 1e-9;
      r.duration_s = static_cast<double>(e.duration_ns) * 1e-9;
      r.bytes = op.bytes;
      r.failed = e.failed;
      out.push_back(std::move(r));
    }
  }
  return out;
}

Schedule BinaryTraceReader::schedule() const {
  Schedule s;
  s.layout = layout_;
  s.programs = programs_;
  s.program_of_rank = program_of_rank_;
  s.names = names_;
  return s;
}

} // namespace twinscale::schedules
