// The simulator follows the execution rules of schedules/execution_rules.hpp where
// matching by arrival would differ: messages of one pair and collectives of one group
// posted out of program order (from two streams) still meet their k-th counterpart.
#include <catch2/catch.hpp>

#include "schedules/trace_check.hpp"
#include "sim_test_util.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

double end_of(const SimReport& r, int64_t rank, uint32_t op) {
  for (const auto& e : r.trace.events)
    if (e.rank == rank && e.op_index == op) return e.end_s;
  FAIL("no event of rank " << rank << " op " << op);
  return -1;
}

} // namespace

TEST_CASE("sim rules: the k-th send meets the k-th receive even when sends are posted out of order", "[sim][rules]") {
  auto spec = tiny_cluster();
  const double bw = spec.gpu.hbm_bw_bytes_per_s;
  // stage 0: message 0 (1 MB) waits for 10 ms of compute; message 1 (2 MB), on another
  // stream, is posted at once. Stage 1 receives message 0, then message 1.
  ProgramBuilder a;
  const uint32_t work = a.add(compute(10e-3, bw));
  a.add(p2p(OpKind::Send, 1, 1e6, Stream::PpSend), {work});
  a.add(p2p(OpKind::Send, 1, 2e6, Stream::DpComm));
  ProgramBuilder b;
  b.add(p2p(OpKind::Recv, 0, 1e6, Stream::PpRecv));
  b.add(p2p(OpKind::Recv, 0, 2e6, Stream::PpRecv));
  std::vector<schedules::Program> programs;
  programs.push_back(a.take());
  programs.push_back(b.take());
  const auto s = make_schedule({1, 1, 2}, std::move(programs), {0, 1});
  topology::Fabric fabric(spec);
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    INFO(to_string(mode));
    SimOptions o = exact_options(mode);
    o.aggregate = false;
    o.record_trace = true;
    const SimReport r = simulate(s, fabric, {0, 8}, o); // two servers
    REQUIRE(r.completed);
    CHECK(schedules::check_trace_semantics(s, r.trace.events).empty());
    // message 0 could not move before its send was posted at 10 ms; message 1 moved
    // after it (stream order of the receives), matched with the send posted first
    CHECK(end_of(r, 1, 0) > 10e-3);
    CHECK(end_of(r, 1, 1) > end_of(r, 1, 0));
    CHECK(end_of(r, 0, 2) == end_of(r, 1, 1));
    CHECK(end_of(r, 0, 1) == end_of(r, 1, 0));
  }
}

TEST_CASE("sim rules: a schedule whose members disagree is refused before it runs, naming rank, group and instance",
          "[sim][rules]") {
  auto spec = tiny_cluster();
  ProgramBuilder a, b;
  a.add(collective(OpKind::AllReduce, GroupKind::Tp, 1e6, Stream::TpComm));
  a.add(collective(OpKind::AllGather, GroupKind::Tp, 2e6, Stream::TpComm));
  b.add(collective(OpKind::AllReduce, GroupKind::Tp, 1e6, Stream::TpComm));
  b.add(collective(OpKind::AllGather, GroupKind::Tp, 3e6, Stream::TpComm));
  std::vector<schedules::Program> programs;
  programs.push_back(a.take());
  programs.push_back(b.take());
  const auto s = make_schedule({2, 1, 1}, std::move(programs), {0, 1});
  topology::Fabric fabric(spec);
  SimOptions o = exact_options(SimMode::Analytic);
  o.aggregate = false;
  CHECK_THROWS_WITH(simulate(s, fabric, {0, 1}, o), Catch::Contains("rank 1 op 1") &&
                                                        Catch::Contains("instance 1 on its tp group") &&
                                                        Catch::Contains("rank 0"));
}
