// Binary trace writer (.tstrace): the writer's thread writes the bytes the inline writer
// writes, whatever the stage; a write error on that thread is thrown to the recording
// thread naming the file, leaves no file behind, and the thread is always joined.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include "config/job_file.hpp"
#include "schedules/binary_trace.hpp"
#include "schedules/error.hpp"
#include "schedules/schedule.hpp"
#include "tests/cli_runner.hpp"
#include "tests/file_size_limit.hpp"
#include "tests/scratch.hpp"

using namespace twinscale;
using namespace twinscale::schedules;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return twinscale::test::empty_scratch_dir("btw-" + name); }

/// Records every op of every rank `rounds` times over (ranks interleaved op by op, ops
/// scrambled; a round's ops start 2^40 ns after the last), as the simulator would.
void record_all(BinaryTraceWriter& w, const Schedule& s, int rounds) {
  for (int round = 0; round < rounds; ++round)
    for (uint32_t i = 0;; ++i) {
      bool any = false;
      for (int64_t r = 0; r < s.world(); ++r) {
        const auto ops = static_cast<uint32_t>(s.program(r).ops.size());
        if (i >= ops) continue;
        any = true;
        const uint32_t op = (i * 7919u) % ops;
        const double start = static_cast<double>((int64_t{round} << 40) + int64_t{i} * 1000 + r) * 1e-9;
        w.record(r, op, start, start + static_cast<double>(op % 13) * 1e-6, op % 11 == 0);
      }
      if (!any) break;
    }
}

} // namespace

TEST_CASE("binary trace writer: the writer's thread writes the inline writer's bytes", "[schedules][trace]") {
  const Schedule s = lower(config::load_job_preset("tiny-megascale"));
  const fs::path dir = scratch("same");
  // Stages of one event, a few, a fraction of a round and more than the whole trace: from
  // a full queue at every event to no thread at all.
  for (size_t stage : {size_t{1}, size_t{7}, size_t{1000}, BinaryTraceWriter::kStageEvents}) {
    INFO("stage " << stage);
    for (TraceWriting writing : {TraceWriting::Inline, TraceWriting::Background}) {
      BinaryTraceWriter w((dir / (writing == TraceWriting::Inline ? "inline.tstrace" : "thread.tstrace")).string(), s,
                          "sim", stage, writing);
      w.set_hosts({"h0", "h1"});
      record_all(w, s, 3);
      w.finish();
    }
    const std::string inline_bytes = twinscale::test::slurp(dir / "inline.tstrace");
    CHECK(inline_bytes.size() > static_cast<size_t>(s.world()) * BinaryTraceWriter::kChunkBytes);
    CHECK(twinscale::test::slurp(dir / "thread.tstrace") == inline_bytes);
  }
  for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().string().find(".tmp.") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("binary trace writer: ranks given another's events: the thread's bytes, the same events at every stage",
          "[schedules][trace]") {
  // The stage is sized to the ranks that record and the metadata of the programs is
  // encoded on the writer's thread while it waits: neither may change a byte against the
  // inline writer, nor an event a reader reads.
  const Schedule s = lower(config::load_job_preset("tiny-1f1b")); // tp 2: ranks 0 and 1 run one program
  REQUIRE(s.program_of_rank[0] == s.program_of_rank[1]);
  const fs::path dir = scratch("stand-in");
  std::vector<std::vector<BinaryTraceEvent>> first; // by rank, at the first stage
  for (size_t stage : {size_t{1}, size_t{5}, size_t{300}, BinaryTraceWriter::kStageEvents}) {
    INFO("stage " << stage);
    for (TraceWriting writing : {TraceWriting::Inline, TraceWriting::Background}) {
      BinaryTraceWriter w((dir / (writing == TraceWriting::Inline ? "inline.tstrace" : "thread.tstrace")).string(), s,
                          "sim", stage, writing);
      w.same_events_as(1, 0);
      for (uint32_t i = 0;; ++i) { // ranks interleaved op by op, as the simulator records
        bool any = false;
        for (int64_t r = 0; r < s.world(); ++r) {
          const auto ops = static_cast<uint32_t>(s.program(r).ops.size());
          if (r == 1 || i >= ops) continue;
          any = true;
          const uint32_t op = (i * 7919u) % ops;
          const double start = static_cast<double>(int64_t{i} * 1000 + r) * 1e-9;
          w.record(r, op, start, start + static_cast<double>(op % 13) * 1e-6, op % 11 == 0);
        }
        if (!any) break;
      }
      w.finish();
    }
    const std::string inline_bytes = twinscale::test::slurp(dir / "inline.tstrace");
    CHECK(twinscale::test::slurp(dir / "thread.tstrace") == inline_bytes);
    const BinaryTraceReader rd((dir / "thread.tstrace").string());
    std::vector<BinaryTraceEvent> ev;
    for (int64_t r = 0; r < s.world(); ++r) {
      INFO("rank " << r);
      rd.read_rank(r, ev);
      CHECK(ev.size() == s.program(r == 1 ? 0 : r).ops.size());
      if (first.size() < static_cast<size_t>(s.world())) {
        first.push_back(ev);
        continue;
      }
      CHECK(ev == first[static_cast<size_t>(r)]);
    }
    rd.read_rank(0, ev);
    std::vector<BinaryTraceEvent> ev1;
    rd.read_rank(1, ev1);
    CHECK(ev1 == ev);
  }
  fs::remove_all(dir);
}

TEST_CASE("binary trace writer: a write error on the writer's thread names the file and leaves nothing",
          "[schedules][trace]") {
  const Schedule s = lower(config::load_job_preset("tiny-megascale"));
  const fs::path dir = scratch("full");
  const std::string path = (dir / "full.tstrace").string();
  for (TraceWriting writing : {TraceWriting::Background, TraceWriting::Inline}) {
    INFO((writing == TraceWriting::Inline ? "inline" : "background"));
    {
      const twinscale::test::FileSizeLimit limit(64 * 1024); // the trace is a few MB: a disk full early on
      BinaryTraceWriter w(path, s, "sim", 100, writing);
      auto write_it = [&] {
        record_all(w, s, 20);
        w.finish();
      };
      CHECK_THROWS_WITH(write_it(), Catch::Contains(path) && Catch::Contains("disk full"));
      // Once failed, the writer says so again rather than writing on.
      CHECK_THROWS_WITH(w.finish(), Catch::Contains(path));
    }
    CHECK_FALSE(fs::exists(path));
    CHECK(fs::is_empty(dir));
  }
  fs::remove_all(dir);
}

TEST_CASE("binary trace writer: a writer dropped with batches queued leaves nothing", "[schedules][trace]") {
  const Schedule s = lower(config::load_job_preset("tiny-megascale"));
  const fs::path dir = scratch("drop");
  const std::string path = (dir / "drop.tstrace").string();
  auto unwind = [&] {
    BinaryTraceWriter w(path, s, "sim", 10);
    record_all(w, s, 5);
    throw ScheduleError("the simulation failed"); // the destructor joins the thread
  };
  CHECK_THROWS_WITH(unwind(), "the simulation failed");
  CHECK_FALSE(fs::exists(path));
  CHECK(fs::is_empty(dir));
  fs::remove_all(dir);
}
