// NCCL's ordering rules as a property of a schedule and an issue order
// (schedules/nccl_order.hpp): a communicator's kernels in issue order, collectives
// matched by position, sends with receives.
#include <algorithm>

#include <catch2/catch.hpp>

#include "config/job_file.hpp"
#include "schedules/nccl_order.hpp"
#include "schedules/validate.hpp"

using namespace twinscale::schedules;

namespace {

Op comm(OpKind kind, GroupKind group, Stream stream, int32_t peer, double bytes = 1024) {
  Op op;
  op.kind = kind;
  op.group = group;
  op.stream = stream;
  op.peer = peer;
  op.bytes = bytes;
  return op;
}

/// Two pipeline stages, each sending to the other first and then receiving: valid under
/// the stream semantics (sends and receives are on different streams), a deadlock when
/// every send and receive of the pair shares one communicator.
Schedule crossing_pair() {
  Schedule s;
  s.layout = Layout{1, 1, 2};
  s.names = {"pp.send", "pp.recv"};
  for (int32_t stage = 0; stage < 2; ++stage) {
    Program p;
    Op send = comm(OpKind::Send, GroupKind::Pp, Stream::PpSend, 1 - stage);
    Op recv = comm(OpKind::Recv, GroupKind::Pp, Stream::PpRecv, 1 - stage);
    recv.name = 1;
    p.ops = {send, recv};
    s.programs.push_back(p);
  }
  s.program_of_rank = {0, 1};
  s.memory_by_stage.resize(2);
  return s;
}

} // namespace

TEST_CASE("nccl order: communicator names per group, priority class and p2p direction") {
  Schedule s = crossing_pair();
  const Op& send = s.programs[0].ops[0];
  CHECK(communicator_of(s, 0, send) == "send:pp:1");
  CHECK(communicator_of(s, 1, s.programs[1].ops[1]) == "recv:pp:0");
  CHECK(communicator_of(s, 0, send, CommModel{false, true}) == "pp");
  Op dp = comm(OpKind::AllReduce, GroupKind::Dp, Stream::DpComm, -1);
  CHECK(communicator_of(s, 0, dp) == "dp");
  dp.priority = 1;
  CHECK(communicator_of(s, 0, dp) == "dp@p1");
  CHECK(communicator_of(s, 0, dp, CommModel{true, false}) == "dp");
  Op gemm;
  CHECK(communicator_of(s, 0, gemm).empty());
}

TEST_CASE("nccl order: sends and receives crossing on one shared communicator deadlock, directed channels do not") {
  const Schedule s = crossing_pair();
  REQUIRE(validate(s, ValidateOptions{.check_memory = false}).empty()); // the device model runs it
  const auto v = check_nccl_order(s, CommModel{false, false});
  REQUIRE(v.size() == 2);
  for (const Violation& x : v) {
    INFO(describe(x));
    CHECK(x.kind == ViolationKind::NcclOrder);
    CHECK(x.op_index == 1); // each rank's recv queues behind its own send
    CHECK(x.reason.find("issue order") != std::string::npos);
    CHECK(x.reason.find("rank " + std::to_string(1 - x.rank)) != std::string::npos);
  }
  CHECK(check_nccl_order(s, CommModel{true, true}).empty());
  // Issuing the receive first on one stage is enough on a shared communicator.
  const IssueOrder recv_first = [](int64_t rank) {
    return rank == 1 ? std::vector<uint32_t>{1, 0} : std::vector<uint32_t>{0, 1};
  };
  CHECK(check_nccl_order(s, CommModel{false, false}, recv_first).empty());
}

TEST_CASE("nccl order: members issuing one communicator's collectives in different orders are named") {
  Schedule s;
  s.layout = Layout{2, 1, 1};
  s.names = {"a", "b"};
  Program p;
  Op ar = comm(OpKind::AllReduce, GroupKind::Tp, Stream::TpComm, -1, 4096);
  Op ag = comm(OpKind::AllGather, GroupKind::Tp, Stream::Compute, -1, 2048);
  ag.name = 1;
  p.ops = {ar, ag};
  s.programs = {p};
  s.program_of_rank = {0, 0};
  s.memory_by_stage.resize(1);
  CHECK(check_nccl_order(s).empty());
  const IssueOrder swapped = [](int64_t rank) {
    return rank == 1 ? std::vector<uint32_t>{1, 0} : std::vector<uint32_t>{0, 1};
  };
  const auto v = check_nccl_order(s, kDeviceCommModel, swapped);
  REQUIRE(!v.empty());
  const auto mismatch =
      std::find_if(v.begin(), v.end(), [](auto& x) { return x.kind == ViolationKind::CollectiveMismatch; });
  REQUIRE(mismatch != v.end());
  INFO(describe(*mismatch));
  CHECK(mismatch->rank == 1);
  CHECK(mismatch->reason.find("rank 0") != std::string::npos);
  CHECK(mismatch->reason.find("tp{0,1}") != std::string::npos);
}

TEST_CASE("nccl order: the tiny presets run under NCCL's rules with the devices' communicators") {
  for (const char* name : {"tiny-1f1b", "tiny-interleaved", "tiny-megascale"}) {
    INFO(name);
    const Schedule s =
        lower(twinscale::config::load_job_preset(name), LoweringTarget{80e9, /*check_memory=*/false, {}, true});
    const auto v = check_nccl_order(s);
    for (const auto& x : v) UNSCOPED_INFO(describe(x));
    CHECK(v.empty());
  }
}
