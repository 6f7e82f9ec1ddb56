// Binary trace (.tstrace): written from a schedule + events, read back event by event;
// same input → same bytes; truncated and corrupted files are refused naming the file and
// the offset or rank.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "config/job_file.hpp"
#include "schedules/binary_trace.hpp"
#include "schedules/error.hpp"
#include "schedules/schedule.hpp"
#include "schedules/trace.hpp"
#include "tests/scratch.hpp"

using namespace twinscale;
using namespace twinscale::schedules;
namespace fs = std::filesystem;

namespace {

/// Every op of every rank, in a scrambled rank order, with times at ns resolution.
Trace fake_trace(const Schedule& s) {
  Trace t;
  t.source = "test";
  for (int64_t r = s.world() - 1; r >= 0; --r)
    for (uint32_t i = 0; i < s.program(r).ops.size(); ++i) {
      const uint32_t op = (i * 7919u) % static_cast<uint32_t>(s.program(r).ops.size()); // out of order
      const double start = op * 1e-6 + r * 1e-9;
      t.events.push_back({r, op, start, start + (op % 5) * 0.25e-6, op == 7});
    }
  return t;
}

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const fs::path& p, const std::string& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << b;
}

fs::path scratch(const std::string& name) { return twinscale::test::scratch_dir("bt-" + name); }

} // namespace

TEST_CASE("binary trace: round trip of every event, static fields from the program", "[schedules][trace]") {
  const Schedule s = lower(config::load_job_preset("tiny-megascale"));
  const Trace t = fake_trace(s);
  const fs::path dir = scratch("rt");
  const std::string path = (dir / "t.tstrace").string();
  write_binary_trace(t, s, path);
  CHECK_FALSE(fs::exists(path + ".tmp." + std::to_string(::getpid())));
  const BinaryTraceReader r(path);
  CHECK(r.source() == "test");
  CHECK(r.world() == s.world());
  CHECK(r.layout().tp == s.layout.tp);
  CHECK(r.layout().pp == s.layout.pp);
  CHECK(r.layout().dp == s.layout.dp);
  CHECK(r.events() == t.events.size());
  CHECK(r.names() == s.names);
  REQUIRE(r.programs().size() == s.programs.size());
  std::map<std::pair<int64_t, uint32_t>, const TraceEvent*> want;
  for (const auto& e : t.events) want[{e.rank, e.op_index}] = &e;
  std::vector<BinaryTraceEvent> events;
  size_t seen = 0;
  for (int64_t rank = 0; rank < r.world(); ++rank) {
    CHECK(r.program_of(rank) == s.program_of_rank[rank]);
    r.read_rank(rank, events);
    REQUIRE(events.size() == s.program(rank).ops.size());
    for (const auto& e : events) {
      const TraceEvent& w = *want.at({rank, e.op_index});
      CHECK(e.start_ns == std::llround(w.start_s * 1e9));
      CHECK(e.duration_ns == std::llround((w.end_s - w.start_s) * 1e9));
      CHECK(e.failed == w.failed);
      const Op& a = r.programs()[r.program_of(rank)].ops[e.op_index];
      const Op& b = s.program(rank).ops[e.op_index];
      CHECK(a.kind == b.kind);
      CHECK(a.stream == b.stream);
      CHECK(a.group == b.group);
      CHECK(a.peer == b.peer);
      CHECK(a.name == b.name);
      CHECK(a.labels.iteration == b.labels.iteration);
      CHECK(a.labels.micro_batch == b.labels.micro_batch);
      CHECK(a.labels.phase == b.labels.phase);
      CHECK(a.bytes == b.bytes);
      ++seen;
    }
  }
  CHECK(seen == t.events.size());
  // The records of chosen ranks are what the Chrome reader returns for them.
  std::stringstream json;
  write_chrome_trace(t, s, json);
  const auto from_json = read_chrome_trace(json, "t.json");
  std::map<std::pair<int64_t, uint32_t>, TraceRecord> by_key;
  for (const auto& x : from_json) by_key[{x.rank, x.op_index}] = x;
  for (const TraceRecord& x : r.records({1, 3})) {
    const TraceRecord& y = by_key.at({x.rank, x.op_index});
    CHECK(x.name == y.name);
    CHECK(x.kind == y.kind);
    CHECK(x.stream == y.stream);
    CHECK(x.failed == y.failed);
    CHECK(x.bytes == y.bytes);
    CHECK(x.start_s == Approx(y.start_s).margin(1e-9));
    CHECK(x.duration_s == Approx(y.duration_s).margin(1e-9));
  }
  fs::remove_all(dir);
}

TEST_CASE("binary trace: same events, same bytes, however the chunks fall", "[schedules][trace]") {
  const Schedule s = lower(config::load_job_preset("tiny-1f1b"));
  const Trace t = fake_trace(s);
  const fs::path dir = scratch("det");
  write_binary_trace(t, s, (dir / "a.tstrace").string());
  write_binary_trace(t, s, (dir / "b.tstrace").string());
  CHECK(bytes_of(dir / "a.tstrace") == bytes_of(dir / "b.tstrace"));
  // A long run: ranks fill several chunks, interleaved in the file, and read back whole.
  BinaryTraceWriter w((dir / "long.tstrace").string(), s, "sim");
  const uint32_t ops = static_cast<uint32_t>(s.program(0).ops.size());
  uint64_t n = 0;
  for (uint32_t i = 0; i < ops; ++i)
    for (int64_t rank : {0, 1}) {
      w.record(rank, i, 1.0 + i * 1e-3, 1.0 + i * 1e-3 + 1e-4, false);
      ++n;
    }
  w.finish();
  const BinaryTraceReader r((dir / "long.tstrace").string());
  std::vector<BinaryTraceEvent> ev;
  r.read_rank(1, ev);
  REQUIRE(ev.size() == ops);
  CHECK(ev.back().op_index == ops - 1);
  CHECK(ev.back().start_ns == std::llround((1.0 + (ops - 1) * 1e-3) * 1e9));
  CHECK(r.events() == n);
  r.read_rank(2, ev);
  CHECK(ev.empty());
  fs::remove_all(dir);
}

TEST_CASE("binary trace: the staging batch moves chunks in the file, never what a rank holds", "[schedules][trace]") {
  const Schedule s = lower(config::load_job_preset("tiny-megascale"));
  const fs::path dir = scratch("stage");
  // Every op of every rank once, ranks interleaved op by op, in a scrambled op order;
  // starts 2^46 ns apart and long durations make ~15 bytes an event: two chunks a rank.
  std::vector<std::vector<BinaryTraceEvent>> expected(static_cast<size_t>(s.world()));
  auto write = [&](const std::string& name, size_t stage) {
    BinaryTraceWriter w((dir / name).string(), s, "sim", stage);
    for (uint32_t i = 0;; ++i) {
      bool any = false;
      for (int64_t r = 0; r < s.world(); ++r) {
        const auto ops = static_cast<uint32_t>(s.program(r).ops.size());
        if (i >= ops) continue;
        any = true;
        const uint32_t op = (i * 7919u) % ops;
        const double start = static_cast<double>(int64_t{i} << 46) * 1e-9 + static_cast<double>(r) * 1e-9;
        const double end = start + static_cast<double>((int64_t{1} << 40) + op) * 1e-9;
        w.record(r, op, start, end, op % 11 == 0);
        if (stage == 1) // as the writer rounds: integer nanoseconds
          expected[static_cast<size_t>(r)].push_back(
              {op, op % 11 == 0, std::llround(start * 1e9), std::max<int64_t>(0, std::llround((end - start) * 1e9))});
      }
      if (!any) break;
    }
    w.finish();
  };
  write("one.tstrace", 1); // an event at a time: how the writer encoded before it staged
  write("seven.tstrace", 7);
  write("default.tstrace", BinaryTraceWriter::kStageEvents);
  write("default2.tstrace", BinaryTraceWriter::kStageEvents);
  CHECK(bytes_of(dir / "default.tstrace") == bytes_of(dir / "default2.tstrace"));
  std::vector<BinaryTraceEvent> ev;
  for (const char* name : {"one.tstrace", "seven.tstrace", "default.tstrace"}) {
    const BinaryTraceReader rd((dir / name).string());
    CHECK(rd.file_bytes() > static_cast<uint64_t>(s.world()) * BinaryTraceWriter::kChunkBytes); // > 1 chunk a rank
    for (int64_t r = 0; r < s.world(); ++r) {
      INFO(name << " rank " << r);
      rd.read_rank(r, ev);
      CHECK(ev == expected[static_cast<size_t>(r)]);
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("binary trace: a rank given another's events reads them back, written once", "[schedules][trace]") {
  const Schedule s = lower(config::load_job_preset("tiny-1f1b")); // tp 2: ranks 0 and 1 run one program
  REQUIRE(s.program_of_rank[0] == s.program_of_rank[1]);
  const Trace t = fake_trace(s);
  const fs::path dir = scratch("same");
  BinaryTraceWriter w((dir / "same.tstrace").string(), s, "sim");
  w.same_events_as(1, 0);
  uint64_t recorded = 0;
  for (const TraceEvent& e : t.events)
    if (e.rank != 1) {
      w.record(e.rank, e.op_index, e.start_s, e.end_s, e.failed);
      ++recorded;
    }
  CHECK_THROWS_WITH(w.record(1, 0, 0, 1, false), Catch::Contains("rank 1") && Catch::Contains("events of rank 0"));
  w.finish();
  const BinaryTraceReader r((dir / "same.tstrace").string());
  std::vector<BinaryTraceEvent> e0, e1;
  r.read_rank(0, e0);
  r.read_rank(1, e1);
  REQUIRE(e0.size() == s.program(0).ops.size());
  CHECK(e1 == e0);
  CHECK(r.events() == recorded + e0.size()); // the header counts both ranks' events
  CHECK(r.event_count(1) == e0.size());
  // the file holds rank 0's events once: smaller than the trace with rank 1's own copy
  write_binary_trace(t, s, (dir / "full.tstrace").string());
  CHECK(fs::file_size(dir / "same.tstrace") < fs::file_size(dir / "full.tstrace"));
  fs::remove_all(dir);
}

TEST_CASE("binary trace: a rank given another's events is refused where that cannot hold", "[schedules][trace]") {
  const Schedule s = lower(config::load_job_preset("tiny-1f1b"));
  const fs::path dir = scratch("same-bad");
  {
    BinaryTraceWriter w((dir / "w.tstrace").string(), s, "sim");
    CHECK_THROWS_WITH(w.same_events_as(1, 1), Catch::Contains("rank 1 given the events of rank 1"));
    CHECK_THROWS_WITH(w.same_events_as(s.world(), 0), Catch::Contains("the schedule has ranks 0.."));
    int64_t other = -1; // a rank of another program
    for (int64_t r = 1; r < s.world() && other < 0; ++r)
      if (s.program_of_rank[static_cast<size_t>(r)] != s.program_of_rank[0]) other = r;
    REQUIRE(other > 0);
    CHECK_THROWS_WITH(w.same_events_as(other, 0), Catch::Contains("different programs"));
    w.same_events_as(1, 0);
    CHECK_THROWS_WITH(w.same_events_as(1, 0), Catch::Contains("already has another's events"));
    CHECK_THROWS_WITH(w.same_events_as(0, 1), Catch::Contains("a rank that has another's events"));
  } // never finished: nothing left behind
  CHECK(fs::is_empty(dir));
  fs::remove_all(dir);
}

TEST_CASE("binary trace: bad events are refused when written", "[schedules][trace]") {
  const Schedule s = lower(config::load_job_preset("tiny-1f1b"));
  const fs::path dir = scratch("badw");
  const std::string path = (dir / "w.tstrace").string();
  {
    BinaryTraceWriter w(path, s, "sim");
    CHECK_THROWS_WITH(w.record(s.world(), 0, 0, 1, false), Catch::Contains("rank " + std::to_string(s.world())));
    CHECK_THROWS_WITH(w.record(0, 1u << 30, 0, 1, false), Catch::Contains("op 1073741824"));
    CHECK_THROWS_WITH(w.record(0, 0, 2, 1, false), Catch::Contains("times"));
    CHECK_THROWS_WITH(w.record(0, 0, std::nan(""), 1, false), Catch::Contains("times"));
  } // never finished: nothing left behind
  CHECK_FALSE(fs::exists(path));
  CHECK(fs::is_empty(dir));
  CHECK_THROWS_WITH(BinaryTraceWriter((dir / "no/such/dir/x.tstrace").string(), s, "sim"),
                    Catch::Contains("x.tstrace") && Catch::Contains("cannot write"));
  fs::remove_all(dir);
}

TEST_CASE("binary trace: truncated and corrupted files name the file and the offset or rank", "[schedules][trace]") {
  const Schedule s = lower(config::load_job_preset("tiny-1f1b"));
  const fs::path dir = scratch("bad");
  const fs::path good = dir / "g.tstrace";
  write_binary_trace(fake_trace(s), s, good.string());
  const std::string b = bytes_of(good);
  const fs::path bad = dir / "bad.tstrace";
  auto read_all = [&] {
    const BinaryTraceReader r(bad.string());
    std::vector<BinaryTraceEvent> ev;
    for (int64_t rank = 0; rank < r.world(); ++rank) r.read_rank(rank, ev);
  };
  write_bytes(bad, b.substr(0, b.size() - 10));
  CHECK_THROWS_WITH(read_all(), Catch::Contains("bad.tstrace") && Catch::Contains("truncated"));
  write_bytes(bad, b.substr(0, 30));
  CHECK_THROWS_WITH(read_all(), Catch::Contains("bad.tstrace") && Catch::Contains("header"));
  write_bytes(bad, "{\"traceEvents\":[]}" + std::string(100, ' '));
  CHECK_THROWS_WITH(read_all(), Catch::Contains("not a twinscale binary trace"));
  std::string v = b;
  v[8] = 9; // version
  write_bytes(bad, v);
  CHECK_THROWS_WITH(read_all(), Catch::Contains("unsupported version 9"));
  v = b;
  v[v.size() - 3] ^= 0x40; // metadata
  write_bytes(bad, v);
  CHECK_THROWS_WITH(read_all(), Catch::Contains("bad.tstrace: offset") && Catch::Contains("checksum"));
  v = b;
  for (size_t i = 64; i < 96; ++i) v[i] = static_cast<char>(0xff); // the first chunk's events
  write_bytes(bad, v);
  CHECK_THROWS_WITH(read_all(), Catch::Contains("bad.tstrace: offset") && Catch::Contains("rank"));
  CHECK_THROWS_WITH(BinaryTraceReader((dir / "none.tstrace").string()), Catch::Contains("none.tstrace"));
  // Every truncation and every single-byte flip is refused, naming the file.
  const size_t stride = std::max<size_t>(1, b.size() / 300);
  for (size_t cut = 0; cut < b.size(); cut += stride) {
    write_bytes(bad, b.substr(0, cut));
    CHECK_THROWS_AS(read_all(), ScheduleError);
  }
  for (size_t i = 0; i < b.size(); i += i < 128 ? 1 : stride) { // the whole header, then a sample
    v = b;
    v[i] = static_cast<char>(v[i] ^ 0x5a);
    write_bytes(bad, v);
    INFO("byte " << i << " of " << b.size());
    CHECK_THROWS_WITH(read_all(), Catch::Contains("bad.tstrace"));
  }
  fs::remove_all(dir);
}
