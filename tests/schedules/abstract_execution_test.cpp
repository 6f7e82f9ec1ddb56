// The one abstract execution behind validate(): the stream semantics and NCCL's
// communicator queues in a single run, each stuck rank reported with its one cause.
#include <catch2/catch.hpp>

#include "config/job_file.hpp"
#include "schedules/error.hpp"
#include "schedules/execution_rules.hpp"
#include "schedules/nccl_order.hpp"
#include "schedules/validate.hpp"

using namespace twinscale;
using namespace twinscale::schedules;

namespace {

Op comm_op(OpKind kind, GroupKind group, Stream stream, int32_t peer, uint32_t name) {
  Op op;
  op.kind = kind;
  op.group = group;
  op.stream = stream;
  op.peer = peer;
  op.bytes = 4096;
  op.name = name;
  return op;
}

/// dp 2 × pp 2, every rank the same program: receive from the other stage; all-reduce #0
/// over dp after it (stream dp_comm); all-reduce #1 over dp on the compute stream; send to
/// the other stage after #1. The streams run #1 first, so the send meets the receive and
/// #0 follows; the devices' one dp communicator runs #0 before #1, which waits for the
/// receive, which waits for the peer's send, which waits for #1: stuck by NCCL's order only.
Schedule queue_only_deadlock() {
  Schedule s;
  s.layout = Layout{1, 2, 2};
  s.names = {"recv", "ar0", "ar1", "send"};
  Program p;
  p.ops = {comm_op(OpKind::Recv, GroupKind::Pp, Stream::PpRecv, -1, 0),
           comm_op(OpKind::AllReduce, GroupKind::Dp, Stream::DpComm, -1, 1),
           comm_op(OpKind::AllReduce, GroupKind::Dp, Stream::Compute, -1, 2),
           comm_op(OpKind::Send, GroupKind::Pp, Stream::PpSend, -1, 3)};
  p.ops[1].dep_begin = 0;
  p.ops[1].dep_count = 1;
  p.ops[3].dep_begin = 1;
  p.ops[3].dep_count = 1;
  p.deps = {0, 2};
  for (int32_t stage = 0; stage < 2; ++stage) {
    Program q = p;
    q.ops[0].peer = q.ops[3].peer = 1 - stage;
    s.programs.push_back(q);
  }
  s.program_of_rank.resize(4);
  for (int64_t r = 0; r < 4; ++r) s.program_of_rank[r] = static_cast<uint32_t>(s.layout.coord(r).pp);
  s.memory_by_stage.resize(2);
  return s;
}

std::string all(const std::vector<Violation>& v) {
  std::string out;
  for (const auto& x : v) out += describe(x) + "\n";
  return out;
}

ValidateOptions no_memory() {
  ValidateOptions o;
  o.check_memory = false;
  return o;
}

} // namespace

TEST_CASE("abstract execution: a schedule stuck only under NCCL's order is reported as nccl order",
          "[schedules][validate]") {
  const Schedule s = queue_only_deadlock();
  REQUIRE(is_pp_symmetric(s));
  ValidateOptions streams_only = no_memory();
  streams_only.check_nccl_order = false;
  CHECK(validate(s, streams_only).empty()); // the stream semantics run it
  for (bool symmetry : {true, false}) {
    ValidateOptions o = no_memory();
    o.use_symmetry = symmetry;
    const auto v = validate(s, o);
    INFO(all(v));
    REQUIRE(v.size() == 4); // every rank, named one by one
    for (int64_t r = 0; r < 4; ++r) {
      CHECK(v[r].kind == ViolationKind::NcclOrder);
      CHECK(v[r].rank == r);
      CHECK(v[r].op_index == 2); // all-reduce #1 queues behind #0 on the dp communicator
      CHECK(v[r].reason.find("communicator dp{") != std::string::npos);
      CHECK(v[r].reason.find("issue order, and op 1 (ar0") != std::string::npos);
    }
    CHECK(all(v) == all(check_nccl_order(s))); // the same execution as the NCCL-order check
  }
  // A device that issues the compute stream's all-reduce first runs it.
  const IssueOrder second_first = [](int64_t) { return std::vector<uint32_t>{0, 2, 1, 3}; };
  CHECK(check_nccl_order(s, kDeviceCommModel, second_first).empty());
}

TEST_CASE("abstract execution: a schedule stuck under the streams too is reported as a deadlock",
          "[schedules][validate]") {
  Schedule s = lower(config::load_job_preset("tiny-1f1b"));
  for (Program& p : s.programs) // one stream for sends and receives: 1F1B's crossing messages block
    for (Op& op : p.ops)
      if (op.kind == OpKind::Send || op.kind == OpKind::Recv) op.stream = Stream::PpSend;
  REQUIRE(is_pp_symmetric(s));
  REQUIRE(s.layout.tp * s.layout.dp > 1);
  ValidateOptions streams_only = no_memory();
  streams_only.check_nccl_order = false;
  for (bool symmetry : {true, false}) {
    INFO("symmetry " << symmetry);
    ValidateOptions o = no_memory();
    o.use_symmetry = streams_only.use_symmetry = symmetry;
    const auto v = validate(s, o);
    INFO(all(v));
    REQUIRE(!v.empty());
    for (const auto& x : v) CHECK(x.kind == ViolationKind::Deadlock);
    // Executing every rank with the queues, then without, reports what the streams alone
    // report (one representative per stage under symmetry).
    CHECK(all(v) == all(validate(s, streams_only)));
    CHECK(v.size() == (symmetry ? static_cast<size_t>(s.layout.pp) : static_cast<size_t>(s.world())));
    o.max_violations = 1;
    CHECK(validate(s, o).size() == 1);
  }
  const auto nccl = check_nccl_order(s); // the NCCL-order check alone names every stuck rank
  REQUIRE(nccl.size() == static_cast<size_t>(s.world()));
  for (const auto& x : nccl) CHECK(x.kind == ViolationKind::NcclOrder);
}

TEST_CASE("abstract execution: valid schedules pass with the queues and without", "[schedules][validate]") {
  for (const char* name : {"tiny-1f1b", "tiny-interleaved", "tiny-megascale", "tiny-zb", "tiny-cp"}) {
    INFO(name);
    const Schedule s = lower(config::load_job_preset(name));
    for (bool symmetry : {true, false})
      for (bool queues : {true, false}) {
        ValidateOptions o = no_memory();
        o.use_symmetry = symmetry;
        o.check_nccl_order = queues;
        const auto v = validate(s, o);
        INFO(all(v));
        CHECK(v.empty());
      }
  }
}

TEST_CASE("execution rules: communication ops numbered in another issue order", "[schedules][rules]") {
  const Schedule s = queue_only_deadlock();
  const ExecutionRules rules(s);
  const ProgramIndex& ix = rules.of_rank(0);
  std::vector<uint32_t> own(ix.channels().size());
  for (uint32_t c = 0; c < own.size(); ++c) own[c] = c;
  const std::vector<uint32_t> program_order{0, 1, 2, 3};
  const auto numbers = number_in_issue_order(ix, program_order, own);
  for (uint32_t i = 0; i < 4; ++i) CHECK(numbers[i] == ix.sequence(i));
  CHECK(numbers[2] == 1); // the second all-reduce of the dp channel
  const auto swapped = number_in_issue_order(ix, std::vector<uint32_t>{0, 2, 1, 3}, own);
  CHECK(swapped[2] == 0);
  CHECK(swapped[1] == 1);
  CHECK_THROWS_AS(number_in_issue_order(ix, std::vector<uint32_t>{0, 1, 1, 3}, own), ScheduleError);
  CHECK_THROWS_AS(number_in_issue_order(ix, std::vector<uint32_t>{0, 1, 2}, own), ScheduleError);
}

TEST_CASE("execution rules: the rendezvous waits for every member", "[schedules][rules]") {
  CHECK(!all_members_reached(0, 2));
  CHECK(!all_members_reached(1, 2));
  CHECK(all_members_reached(2, 2));
  CHECK(all_members_reached(1, 1));
}
