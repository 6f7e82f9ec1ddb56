// The validator on deliberately broken schedules: each defect is found and described.
#include <catch2/catch.hpp>

#include <algorithm>

#include "config/job_file.hpp"
#include "schedules/schedule.hpp"
#include "schedules/validate.hpp"

using namespace twinscale;
using namespace twinscale::schedules;

namespace {
Schedule tiny(const char* name = "tiny-1f1b") { return lower(config::load_job_preset(name)); }

/// Gives `rank` its own copy of its program and returns it for editing.
Program& private_program(Schedule& s, int64_t rank) {
  s.programs.push_back(s.program(rank));
  s.program_of_rank[rank] = static_cast<uint32_t>(s.programs.size() - 1);
  return s.programs.back();
}

std::string all(const std::vector<Violation>& v) {
  std::string out;
  for (const auto& x : v) out += describe(x) + "\n";
  return out;
}
} // namespace

TEST_CASE("a valid schedule has no violations, with and without symmetry", "[schedules][validate]") {
  const Schedule s = tiny("tiny-megascale");
  CHECK(is_pp_symmetric(s));
  INFO(all(validate(s)));
  CHECK(validate(s).empty());
}

TEST_CASE("one rank with two collectives swapped", "[schedules][validate]") {
  Schedule s = tiny();
  Program& p = private_program(s, 3); // rank 3 = tp 1, dp 1, pp 0
  CHECK(!is_pp_symmetric(s));
  // swap the first two TP collectives of different kinds (all-gather, reduce-scatter)
  std::vector<size_t> tp;
  for (size_t i = 0; i < p.ops.size(); ++i)
    if (p.ops[i].is_collective() && p.ops[i].group == GroupKind::Tp) tp.push_back(i);
  size_t a = tp[0], b = SIZE_MAX;
  for (size_t i : tp)
    if (p.ops[i].kind != p.ops[a].kind) {
      b = i;
      break;
    }
  REQUIRE(b != SIZE_MAX);
  std::swap(p.ops[a].kind, p.ops[b].kind);
  std::swap(p.ops[a].bytes, p.ops[b].bytes);
  const auto v = validate(s);
  INFO(all(v));
  REQUIRE(!v.empty());
  CHECK(v[0].kind == ViolationKind::CollectiveMismatch);
  CHECK(v[0].rank == 3);
  CHECK(v[0].reason.find("tp group") != std::string::npos);
  CHECK(v[0].reason.find("rank 2") != std::string::npos);
}

TEST_CASE("an unmatched send", "[schedules][validate]") {
  Schedule s = tiny();
  Program& p = s.programs[0]; // every stage-0 rank sends one more activation
  Op extra = *std::find_if(p.ops.begin(), p.ops.end(), [](const Op& o) { return o.kind == OpKind::Send; });
  extra.dep_begin = 0;
  extra.dep_count = 0;
  p.ops.push_back(extra);
  const auto v = validate(s);
  INFO(all(v));
  REQUIRE(!v.empty());
  CHECK(v[0].kind == ViolationKind::UnmatchedP2p);
  CHECK(v[0].reason.find("no matching recv") != std::string::npos);
  CHECK(v[0].op_index == static_cast<int64_t>(p.ops.size() - 1));
}

TEST_CASE("a send whose bytes differ from its recv", "[schedules][validate]") {
  Schedule s = tiny();
  for (Op& op : s.programs[1].ops)
    if (op.kind == OpKind::Recv) {
      op.bytes *= 2;
      break;
    }
  const auto v = validate(s);
  INFO(all(v));
  REQUIRE(!v.empty());
  CHECK(v[0].kind == ViolationKind::UnmatchedP2p);
  CHECK(v[0].reason.find("expects") != std::string::npos);
}

TEST_CASE("a dependency cycle (forward dependency)", "[schedules][validate]") {
  Schedule s = tiny();
  Program& p = s.programs[1];
  // op 10 depends on op 20 (which, through stream order, depends on op 10)
  const size_t at = p.deps.size();
  p.deps.push_back(20);
  p.ops[10].dep_begin = static_cast<uint32_t>(at);
  p.ops[10].dep_count = 1;
  const auto v = validate(s);
  INFO(all(v));
  REQUIRE(!v.empty());
  CHECK(v[0].kind == ViolationKind::Dependency);
  CHECK(v[0].op_index == 10);
  CHECK(v[0].reason.find("op 20") != std::string::npos);
}

TEST_CASE("a deadlock: both pipeline ranks receive before they send", "[schedules][validate]") {
  Schedule s;
  s.layout = Layout{1, 1, 2};
  s.names = {"recv", "send"};
  s.program_of_rank = {0, 1};
  s.memory_by_stage.resize(2);
  for (int32_t peer : {1, 0}) {
    Program p;
    Op recv;
    recv.kind = OpKind::Recv;
    recv.stream = Stream::PpRecv;
    recv.group = GroupKind::Pp;
    recv.peer = peer;
    recv.bytes = 1024;
    recv.name = 0;
    Op send = recv;
    send.kind = OpKind::Send;
    send.stream = Stream::PpSend;
    send.name = 1;
    send.dep_begin = 0;
    send.dep_count = 1; // the send waits for the receive to complete
    p.ops = {recv, send};
    p.deps = {0};
    s.programs.push_back(p);
  }
  const auto v = validate(s);
  INFO(all(v));
  REQUIRE(v.size() == 2);
  for (int64_t r = 0; r < 2; ++r) {
    CHECK(v[r].kind == ViolationKind::Deadlock);
    CHECK(v[r].rank == r);
    CHECK(v[r].op_index == 0);
    CHECK(v[r].reason.find("waits for rank " + std::to_string(1 - r) + " to reach its matching send #0") !=
          std::string::npos);
  }
}

TEST_CASE("a deadlock across stages found without symmetry too", "[schedules][validate]") {
  Schedule s = tiny();
  // stage 0 makes its first send wait for its own last op: stage 1 never gets micro-batch 0
  Program& p = s.programs[0];
  for (size_t i = 0; i < p.ops.size(); ++i)
    if (p.ops[i].kind == OpKind::Send) {
      p.ops.push_back(p.ops[i]);
      p.ops.back().dep_begin = static_cast<uint32_t>(p.deps.size());
      p.ops.back().dep_count = 1;
      p.deps.push_back(static_cast<uint32_t>(p.ops.size() - 2)); // the last op before it
      p.ops[i].kind = OpKind::Elementwise;
      p.ops[i].stream = Stream::Compute;
      p.ops[i].peer = -1;
      // block the moved send behind a recv of a gradient that needs it
      break;
    }
  // the appended send now comes after every recv of gradients, which wait for stage 1's
  // backward, which waits for this activation: deadlock.
  ValidateOptions per_rank;
  per_rank.use_symmetry = false;
  const auto a = validate(s);
  const auto b = validate(s, per_rank);
  INFO(all(a));
  INFO(all(b));
  REQUIRE(!a.empty());
  REQUIRE(!b.empty());
  CHECK(a[0].kind == ViolationKind::Deadlock);
  CHECK(b[0].kind == ViolationKind::Deadlock);
  // symmetry reports one representative per stage; per-rank reports every rank
  CHECK(b.size() >= a.size());
}

TEST_CASE("structural errors are reported, not crashed on", "[schedules][validate]") {
  Schedule s = tiny();
  s.program_of_rank.pop_back();
  auto v = validate(s);
  REQUIRE(v.size() == 1);
  CHECK(v[0].kind == ViolationKind::Structure);
  s = tiny();
  for (Op& op : s.programs[0].ops)
    if (op.kind == OpKind::Send) {
      op.peer = 0;
      break;
    }
  v = validate(s);
  REQUIRE(!v.empty());
  CHECK(v[0].reason.find("peer") != std::string::npos);
}
