// Chrome trace: written from a schedule + events, read back field by field.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <sstream>

#include "config/job_file.hpp"
#include "schedules/error.hpp"
#include "schedules/schedule.hpp"
#include "schedules/trace.hpp"

using namespace twinscale;
using namespace twinscale::schedules;

namespace {
Trace fake_trace(const Schedule& s) {
  Trace t;
  t.source = "test";
  for (int64_t r = s.world() - 1; r >= 0; --r) // out of order on purpose
    for (uint32_t i = 0; i < s.program(r).ops.size(); ++i)
      t.events.push_back({r, i, i * 1e-6 + r * 1e-9, i * 1e-6 + r * 1e-9 + 0.5e-6, i == 7});
  return t;
}
} // namespace

TEST_CASE("trace round trip", "[schedules][trace]") {
  const Schedule s = lower(config::load_job_preset("tiny-megascale"));
  const Trace t = fake_trace(s);
  std::stringstream ss;
  write_chrome_trace(t, s, ss);
  const std::string text = ss.str();
  CHECK(text.find("\"thread_name\"") != std::string::npos);
  CHECK(text.find("\"name\":\"tp_comm\"") != std::string::npos);
  std::istringstream in(text);
  const auto recs = read_chrome_trace(in, "t.json");
  REQUIRE(recs.size() == t.events.size());
  // records come sorted by rank, then start time
  CHECK(recs.front().rank == 0);
  CHECK(recs.back().rank == s.world() - 1);
  for (const auto& r : recs) {
    const Op& op = s.program(r.rank).ops[r.op_index];
    CHECK(r.kind == op.kind);
    CHECK(r.stream == op.stream);
    CHECK(r.name == s.names[op.name]);
    CHECK(r.labels.iteration == op.labels.iteration);
    CHECK(r.labels.micro_batch == op.labels.micro_batch);
    CHECK(r.labels.chunk == op.labels.chunk);
    CHECK(r.labels.layer == op.labels.layer);
    CHECK(r.labels.phase == op.labels.phase);
    CHECK(r.bytes == Approx(op.bytes).margin(0.5));
    CHECK(r.start_s == Approx(r.op_index * 1e-6 + r.rank * 1e-9).margin(1e-9));
    CHECK(r.duration_s == Approx(0.5e-6).margin(1e-9));
    CHECK(r.failed == (r.op_index == 7));
  }
  // deterministic: the same input writes the same bytes
  std::stringstream again;
  write_chrome_trace(t, s, again);
  CHECK(again.str() == text);
}

TEST_CASE("malformed traces name the file and the event", "[schedules][trace]") {
  std::istringstream a("{\"traceEvents\": [ {\"ph\":\"X\",\"pid\":0,\"name\":\"x\",\"ts\":1,\"dur\":1,"
                       "\"args\":{\"op\":1,\"kind\":\"gemmm\"}} ]}");
  CHECK_THROWS_WITH(read_chrome_trace(a, "bad.json"),
                    Catch::Contains("bad.json") && Catch::Contains("traceEvents[0].args.kind"));
  std::istringstream b("not json");
  CHECK_THROWS_AS(read_chrome_trace(b, "bad.json"), ScheduleError);
  const Schedule s = lower(config::load_job_preset("tiny-1f1b"));
  Trace t;
  t.events.push_back({99, 0, 0, 1, false});
  std::ostringstream out;
  CHECK_THROWS_AS(write_chrome_trace(t, s, out), ScheduleError);
}

TEST_CASE("trace: a communication op names its instance, the same on every op of it (rules 2 and 3)",
          "[schedules][trace]") {
  const Schedule s = lower(config::load_job_preset("tiny-megascale"));
  std::stringstream ss;
  write_chrome_trace(fake_trace(s), s, ss);
  std::istringstream in(ss.str());
  const auto recs = read_chrome_trace(in, "t.json");
  // instance → (kind, bytes, ranks that took part); sends and receives counted apart
  struct Seen {
    OpKind kind = OpKind::Gemm;
    double bytes = 0;
    std::set<int64_t> ranks;
    int sends = 0, recvs = 0;
  };
  std::map<std::string, Seen> seen;
  size_t comm = 0;
  for (const auto& r : recs) {
    const Op& op = s.program(r.rank).ops[r.op_index];
    if (!op.is_communication()) {
      CHECK(r.instance.empty());
      continue;
    }
    ++comm;
    REQUIRE(!r.instance.empty());
    Seen& x = seen[r.instance];
    if (op.is_collective()) {
      if (!x.ranks.empty()) {
        CHECK(x.kind == op.kind);
        CHECK(x.bytes == op.bytes);
      }
      x.kind = op.kind;
      x.bytes = op.bytes;
      CHECK(x.ranks.insert(r.rank).second); // one op per member and instance
    } else {
      (op.kind == OpKind::Send ? x.sends : x.recvs) += 1;
      x.ranks.insert(r.rank);
    }
  }
  CHECK(comm > 0);
  size_t collectives = 0, messages = 0;
  for (const auto& [name, x] : seen) {
    INFO(name);
    if (x.sends + x.recvs > 0) { // one send and its receive, on two ranks
      ++messages;
      CHECK(x.sends == 1);
      CHECK(x.recvs == 1);
      CHECK(x.ranks.size() == 2);
      continue;
    }
    ++collectives; // every member of the group took part
    const int64_t member = *x.ranks.begin();
    const Op* op = nullptr;
    for (const auto& r : recs)
      if (r.instance == name) op = &s.program(r.rank).ops[r.op_index];
    REQUIRE(op != nullptr);
    CHECK(static_cast<int64_t>(x.ranks.size()) == s.layout.group_size(op->group));
    const auto members = s.layout.group_members(op->group, member);
    CHECK(std::set<int64_t>(members.begin(), members.end()) == x.ranks);
  }
  CHECK(collectives > 0);
  CHECK(messages > 0);
}

TEST_CASE("trace: a trace without instances (written before them) still reads", "[schedules][trace]") {
  std::istringstream in(
      R"({"traceEvents":[{"ph":"X","name":"g","pid":0,"tid":0,"ts":1,"dur":2,"args":{"op":0,"kind":"all_reduce",)"
      R"("kernel":"none","stream":"dp_comm","iteration":0,"micro_batch":-1,"chunk":-1,"layer":-1,"phase":"opt",)"
      R"("bytes":4,"group":"dp","peer":-1,"failed":false}}]})");
  const auto recs = read_chrome_trace(in, "old.json");
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].instance.empty());
  std::istringstream bad(
      R"({"traceEvents":[{"ph":"X","name":"g","pid":0,"tid":0,"ts":1,"dur":2,"args":{"op":0,"kind":"all_reduce",)"
      R"("kernel":"none","stream":"dp_comm","iteration":0,"micro_batch":-1,"chunk":-1,"layer":-1,"phase":"opt",)"
      R"("bytes":4,"group":"dp","peer":-1,"failed":false,"instance":7}}]})");
  CHECK_THROWS_WITH(read_chrome_trace(bad, "bad.json"), Catch::Contains("bad.json") && Catch::Contains("instance"));
}
