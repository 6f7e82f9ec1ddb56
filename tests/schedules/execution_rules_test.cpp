// The execution rules (schedules/execution_rules.hpp) on hand-made programs: the program
// index, the numbering of collective instances per channel, send/recv matching and the
// checkers that refuse members who disagree.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "config/job_file.hpp"
#include "schedules/error.hpp"
#include "schedules/execution_rules.hpp"
#include "schedules/nccl_order.hpp"

using namespace twinscale;
using namespace twinscale::schedules;

namespace {

Op comm(OpKind kind, GroupKind group, double bytes, Stream stream, int32_t priority = 0, int32_t peer = -1) {
  Op op;
  op.kind = kind;
  op.group = group;
  op.bytes = bytes;
  op.stream = stream;
  op.priority = priority;
  op.peer = peer;
  return op;
}

Op gemm() {
  Op op;
  op.kind = OpKind::Gemm;
  op.kernel = Kernel::Gemm;
  op.flops = 1e6;
  return op;
}

/// A schedule of `layout` whose every rank runs `program` (ranks get their own copy
/// through own()).
Schedule hand_made(Layout layout, Program program) {
  Schedule s;
  s.layout = layout;
  s.programs.push_back(std::move(program));
  s.program_of_rank.assign(static_cast<size_t>(layout.world()), 0);
  s.names = {"op"};
  return s;
}

Program& own(Schedule& s, int64_t rank, Program p) {
  s.programs.push_back(std::move(p));
  s.program_of_rank[static_cast<size_t>(rank)] = static_cast<uint32_t>(s.programs.size() - 1);
  return s.programs.back();
}

/// Tp and dp collectives interleaved on two streams, dp split by priority class.
Program interleaved() {
  Program p;
  p.ops = {comm(OpKind::AllReduce, GroupKind::Tp, 100, Stream::TpComm),        // 0: tp #0
           comm(OpKind::ReduceScatter, GroupKind::Dp, 200, Stream::DpComm, 1), // 1: dp@p1 #0
           gemm(),                                                             // 2
           comm(OpKind::AllGather, GroupKind::Tp, 300, Stream::TpComm),        // 3: tp #1
           comm(OpKind::AllReduce, GroupKind::Dp, 400, Stream::DpComm),        // 4: dp #0
           comm(OpKind::ReduceScatter, GroupKind::Tp, 500, Stream::Compute),   // 5: tp #2
           comm(OpKind::ReduceScatter, GroupKind::Dp, 600, Stream::DpComm, 1), // 6: dp@p1 #1
           comm(OpKind::AllReduce, GroupKind::Dp, 700, Stream::DpComm)};       // 7: dp #1
  p.deps = {0};
  p.ops[2].dep_begin = 0;
  p.ops[2].dep_count = 1;
  return p;
}

} // namespace

TEST_CASE("rules: program index: stream order, positions, predecessors", "[schedules][rules]") {
  const Program p = interleaved();
  const ProgramIndex ix(p, 0);
  CHECK(std::vector<uint32_t>(ix.stream_ops(Stream::TpComm).begin(), ix.stream_ops(Stream::TpComm).end()) ==
        std::vector<uint32_t>{0, 3});
  CHECK(std::vector<uint32_t>(ix.stream_ops(Stream::DpComm).begin(), ix.stream_ops(Stream::DpComm).end()) ==
        std::vector<uint32_t>{1, 4, 6, 7});
  CHECK(ix.position(6) == 2);
  CHECK(ix.stream_prev(6) == 4);
  CHECK(ix.stream_prev(1) == -1);
  CHECK(ix.stream_prev(5) == 2); // the tp reduce-scatter on the compute stream follows the gemm
  CHECK(ix.deps(2).size() == 1);
}

TEST_CASE("rules: collectives are numbered per group and priority class across streams", "[schedules][rules]") {
  const Program p = interleaved();
  const ProgramIndex ix(p, 0);
  REQUIRE(ix.channels().size() == 3); // tp, dp, dp@p1
  CHECK(ix.channel(2) == kNoChannel);
  // tp: ops 0, 3, 5 (the last on the compute stream) are instances 0, 1, 2
  CHECK(ix.channel(0) == ix.channel(3));
  CHECK(ix.channel(0) == ix.channel(5));
  CHECK(ix.sequence(0) == 0);
  CHECK(ix.sequence(3) == 1);
  CHECK(ix.sequence(5) == 2);
  // dp: ops 4, 7; dp@p1: ops 1, 6 (devices run the two classes on their own communicators)
  CHECK(ix.channel(4) == ix.channel(7));
  CHECK(ix.channel(1) == ix.channel(6));
  CHECK(ix.channel(1) != ix.channel(4));
  CHECK(ix.sequence(4) == 0);
  CHECK(ix.sequence(7) == 1);
  CHECK(ix.sequence(1) == 0);
  CHECK(ix.sequence(6) == 1);
  const auto dp1 = ix.channel_ops(ix.channel(6));
  CHECK(std::vector<uint32_t>(dp1.begin(), dp1.end()) == std::vector<uint32_t>{1, 6});
  CHECK(ix.find_channel(Channel{GroupKind::Dp, ChannelDir::Collective, -1, 1}) == ix.channel(1));
  CHECK(ix.find_channel(Channel{GroupKind::Pp, ChannelDir::Collective, -1, 0}) == kNoChannel);
  CHECK(describe(ix.channels()[ix.channel(1)]) == "dp group (priority class 1)");

  // all members agree: no mismatch
  Schedule s = hand_made({2, 2, 1, 1}, interleaved());
  CHECK(ExecutionRules(s).check_collectives().empty());
}

TEST_CASE("rules: a collective whose kind or bytes differ is refused naming rank, group and instance",
          "[schedules][rules]") {
  Schedule s = hand_made({2, 2, 1, 1}, interleaved());
  Program& p = own(s, 3, interleaved()); // rank 3 = tp 1, dp 1
  p.ops[3].bytes = 301;                  // its tp instance 1
  auto v = ExecutionRules(s).check_collectives();
  REQUIRE(v.size() == 1);
  CHECK(v[0].rank == 3);
  CHECK(v[0].other_rank == 2); // the first member of its tp group
  CHECK(v[0].group == GroupKind::Tp);
  CHECK(v[0].instance == 1);
  CHECK(v[0].op == 3);
  INFO(v[0].reason);
  CHECK(v[0].reason.find("rank 3") != std::string::npos);
  CHECK(v[0].reason.find("instance 1 on its tp group") != std::string::npos);
  CHECK(v[0].reason.find("rank 2") != std::string::npos);

  p.ops[3].bytes = 300;
  p.ops[7].kind = OpKind::ReduceScatter; // its dp instance 1 (priority class 0)
  v = ExecutionRules(s).check_collectives();
  REQUIRE(v.size() == 1);
  CHECK(v[0].rank == 3);
  CHECK(v[0].other_rank == 1); // the first member of its dp group
  CHECK(v[0].group == GroupKind::Dp);
  CHECK(v[0].instance == 1);
  CHECK(v[0].reason.find("reduce_scatter of 700 bytes") != std::string::npos);

  p.ops[7].kind = OpKind::AllReduce;
  p.ops[6].priority = 0; // now dp instance 1 of class 0, one dp@p1 instance missing
  v = ExecutionRules(s).check_collectives();
  REQUIRE(!v.empty());
  CHECK(v[0].rank == 3);
  CHECK(v[0].group == GroupKind::Dp);
}

TEST_CASE("rules: past 2,048 programs the collective check finds the same mismatches", "[schedules][rules]") {
  // every rank its own program (a schedule file may give them so): the pairs of programs
  // compared are kept in a hash set instead of one bit per pair
  Schedule s = hand_made({2, 1030, 1, 1}, interleaved());
  for (int64_t r = 0; r < s.world(); ++r) own(s, r, interleaved());
  REQUIRE(s.programs.size() > 2048);
  CHECK(ExecutionRules(s).check_collectives().empty());
  const int64_t last = s.world() - 1;                                          // tp 1, dp 1029
  s.programs[s.program_of_rank[static_cast<size_t>(last)]].ops[3].bytes = 301; // its tp instance 1
  const auto v = ExecutionRules(s).check_collectives();
  REQUIRE(v.size() == 1);
  CHECK(v[0].rank == last);
  CHECK(v[0].other_rank == last - 1); // the first member of its tp group
  CHECK(v[0].group == GroupKind::Tp);
  CHECK(v[0].instance == 1);
}

TEST_CASE("rules: several outstanding messages on one pair match in program order", "[schedules][rules]") {
  // pp = 2: stage 0 sends three messages, one of them from another stream, before it
  // receives; stage 1 receives all three, then answers.
  Program a, b;
  a.ops = {comm(OpKind::Send, GroupKind::Pp, 10, Stream::PpSend, 0, 1),
           comm(OpKind::Send, GroupKind::Pp, 20, Stream::Compute, 0, 1),
           comm(OpKind::Send, GroupKind::Pp, 30, Stream::PpSend, 0, 1),
           comm(OpKind::Recv, GroupKind::Pp, 40, Stream::PpRecv, 0, 1)};
  b.ops = {comm(OpKind::Recv, GroupKind::Pp, 10, Stream::PpRecv, 0, 0), gemm(),
           comm(OpKind::Recv, GroupKind::Pp, 20, Stream::PpRecv, 0, 0),
           comm(OpKind::Recv, GroupKind::Pp, 30, Stream::PpRecv, 0, 0),
           comm(OpKind::Send, GroupKind::Pp, 40, Stream::PpSend, 0, 0)};
  Schedule s = hand_made({1, 1, 2, 1}, a);
  own(s, 1, b);
  const ExecutionRules rules(s);
  const ProgramIndex& ia = rules.of_rank(0);
  CHECK(ia.sequence(0) == 0);
  CHECK(ia.sequence(1) == 1);
  CHECK(ia.sequence(2) == 2);
  CHECK(ia.sequence(3) == 0); // the other direction is its own channel
  const std::map<uint32_t, uint32_t> expected{{0, 0}, {1, 2}, {2, 3}};
  for (const auto& [send, recv] : expected) {
    const auto p = rules.partner(0, send);
    CHECK(p.rank == 1);
    CHECK(p.op == recv);
    const auto back = rules.partner(1, recv);
    CHECK(back.rank == 0);
    CHECK(back.op == send);
  }
  CHECK(rules.partner(0, 3).op == 4);
  CHECK(rules.check_messages().empty());

  s.programs[1].ops[2].bytes = 21; // the second message's receive expects other bytes
  auto v = ExecutionRules(s).check_messages();
  REQUIRE(v.size() == 1);
  CHECK(v[0].rank == 1);
  CHECK(v[0].other_rank == 0);
  CHECK(v[0].instance == 1);
  CHECK(v[0].op == 2);
  CHECK(v[0].other_op == 1);
  CHECK(v[0].reason.find("send #1 from rank 0") != std::string::npos);

  s.programs[1].ops[2].bytes = 20;
  s.programs[1].ops.erase(s.programs[1].ops.begin() + 3); // the third receive is gone
  v = ExecutionRules(s).check_messages();
  REQUIRE(v.size() == 1);
  CHECK(v[0].instance == 2);
  CHECK(v[0].other_op == 2);
  CHECK(v[0].reason.find("3 sends, 2 receives") != std::string::npos);
  CHECK(ExecutionRules(s).partner(0, 2).op == -1);
}

TEST_CASE("rules: a malformed program is refused naming program and op", "[schedules][rules]") {
  Program p = interleaved();
  p.deps = {4};
  CHECK_THROWS_AS(ProgramIndex(p, 7), ScheduleError);
  try {
    ProgramIndex bad(p, 7);
  } catch (const ScheduleError& e) {
    CHECK(std::string(e.what()).find("program 7 op 2: depends on op 4") != std::string::npos);
  }
  p = interleaved();
  p.ops[5].stream = static_cast<Stream>(9);
  CHECK_THROWS_WITH(ProgramIndex(p, 0), Catch::Contains("program 0 op 5: stream 9 out of range"));
  CHECK_THROWS_WITH(group_member(Layout{2, 2, 2, 1}, GroupKind::Pp, 0, 2),
                    Catch::Contains("member 2 outside its pp group of 2"));
}

TEST_CASE("rules: the lowered presets obey every rule, channels are the devices' communicators", "[schedules][rules]") {
  for (const char* preset : {"tiny-1f1b", "tiny-interleaved", "tiny-megascale"}) {
    INFO(preset);
    const Schedule s = lower(config::load_job_preset(preset));
    const ExecutionRules rules(s);
    CHECK(rules.check_collectives().empty());
    CHECK(rules.check_messages().empty());
    for (int64_t r = 0; r < s.world(); ++r) {
      const ProgramIndex& ix = rules.of_rank(r);
      std::map<std::string, std::set<uint16_t>> by_name;
      std::map<uint16_t, std::set<std::string>> by_channel;
      for (uint32_t i = 0; i < ix.size(); ++i) {
        const Op& op = s.program(r).ops[i];
        if (!op.is_communication()) continue;
        const std::string name = communicator_of(s, r, op);
        by_name[name].insert(ix.channel(i));
        by_channel[ix.channel(i)].insert(name);
        if (op.kind == OpKind::Send || op.kind == OpKind::Recv) { // matching is symmetric
          const auto p = rules.partner(r, i);
          REQUIRE(p.op >= 0);
          const auto back = rules.partner(p.rank, static_cast<uint32_t>(p.op));
          CHECK(back.rank == r);
          CHECK(back.op == i);
        }
      }
      for (const auto& [name, ids] : by_name) CHECK(ids.size() == 1);
      for (const auto& [id, names] : by_channel) CHECK(names.size() == 1);
    }
  }
}
