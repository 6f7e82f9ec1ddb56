#include <catch2/catch.hpp>

#include "faults/error.hpp"
#include "faults/fault_plan.hpp"
#include "faults/plan_targets.hpp"

using namespace twinscale::faults;

namespace {
NamedTargets targets() {
  return NamedTargets({"tor0-agg0", "tor0-agg1", "nic3-tor3"}, {"gpu0", "gpu1", "gpu2"}, {"server0", "server1"});
}
PlanEvent ev(PlanEventKind k, std::string target, double at, double until, double slow = 0) {
  PlanEvent e;
  e.kind = k;
  e.target = std::move(target);
  e.at_s = at;
  e.until_s = until;
  e.slowdown = slow;
  return e;
}
} // namespace

TEST_CASE("fault plan: names resolve and events sort by time", "[faults][plan]") {
  FaultPlan plan;
  plan.events.push_back(ev(PlanEventKind::ServerCrash, "server1", 500, kForever));
  plan.events.push_back(ev(PlanEventKind::LinkFlap, "tor0-agg1", 120, 123));
  plan.events.push_back(ev(PlanEventKind::GpuSlowdown, "gpu2", 10, 60, 0.1));
  auto t = targets();
  validate_plan(plan, t);
  REQUIRE(plan.events.size() == 3);
  CHECK(plan.events[0].kind == PlanEventKind::GpuSlowdown);
  CHECK(plan.events[0].target_index == 2);
  CHECK(plan.events[0].speed_factor() == Approx(0.9));
  CHECK(plan.events[1].target_index == 1);
  CHECK(plan.events[1].duration_s() == Approx(3.0));
  CHECK(plan.events[2].target_index == 1);
}

TEST_CASE("fault plan: retransmit limit separates stalls from failures (M13)", "[faults][plan]") {
  RetransmitPolicy rt;
  rt.timeout_per_retry_s = RetransmitPolicy::ib_timeout_s(20); // 4.29 s
  rt.retries = 7;
  CHECK(rt.tolerated_outage_s() == Approx(4.096e-6 * 1048576 * 7));
  CHECK(outage_outcome(3.0, rt) == OutageOutcome::Stall);
  CHECK(outage_outcome(31.0, rt) == OutageOutcome::Fail);
  const auto flap = ev(PlanEventKind::LinkFlap, "x", 100, 103);
  CHECK(std::isinf(outage_failure_time_s(flap, rt)));
  const auto down = ev(PlanEventKind::LinkDown, "x", 100, kForever);
  CHECK(outage_failure_time_s(down, rt) == Approx(100 + rt.tolerated_outage_s()));
  RetransmitPolicy baseline; // NCCL_IB_TIMEOUT 14: 0.47 s, a 3 s flap fails the job
  CHECK(outage_outcome(3.0, baseline) == OutageOutcome::Fail);
}

TEST_CASE("fault plan: unknown names are errors listing how names look", "[faults][plan][errors]") {
  auto t = targets();
  FaultPlan plan;
  plan.events.push_back(ev(PlanEventKind::LinkDown, "tor9-agg9", 1, kForever));
  CHECK_THROWS_WITH(validate_plan(plan, t), Catch::Contains("unknown link name 'tor9-agg9'") &&
                                                Catch::Contains("tor0-agg0") && Catch::Contains("event[0]"));
  plan.events = {ev(PlanEventKind::GpuSlowdown, "gpu7", 1, 2, 0.1)};
  CHECK_THROWS_WITH(validate_plan(plan, t), Catch::Contains("unknown GPU name 'gpu7'") && Catch::Contains("gpu0"));
  plan.events = {ev(PlanEventKind::ServerCrash, "node1", 1, kForever)};
  CHECK_THROWS_WITH(validate_plan(plan, t),
                    Catch::Contains("unknown server name 'node1'") && Catch::Contains("server0"));
}

TEST_CASE("fault plan: contradictory overlapping events are errors", "[faults][plan][errors]") {
  auto t = targets();
  FaultPlan plan;
  plan.events = {ev(PlanEventKind::LinkDown, "tor0-agg0", 100, 200),
                 ev(PlanEventKind::LinkDown, "tor0-agg0", 150, 300)};
  CHECK_THROWS_WITH(validate_plan(plan, t), Catch::Contains("event[1]") && Catch::Contains("already out"));
  plan.events = {ev(PlanEventKind::LinkDown, "tor0-agg0", 100, kForever),
                 ev(PlanEventKind::LinkFlap, "tor0-agg0", 500, 503)};
  CHECK_THROWS_WITH(validate_plan(plan, t), Catch::Contains("already out"));
  plan.events = {ev(PlanEventKind::GpuSlowdown, "gpu1", 0, 50, 0.1),
                 ev(PlanEventKind::GpuSlowdown, "gpu1", 40, 60, 0.2)};
  CHECK_THROWS_WITH(validate_plan(plan, t), Catch::Contains("already slowed"));
  plan.events = {ev(PlanEventKind::ServerCrash, "server0", 10, kForever),
                 ev(PlanEventKind::ServerCrash, "server0", 20, kForever)};
  CHECK_THROWS_WITH(validate_plan(plan, t), Catch::Contains("already crashes"));
  // Back to back is fine; other links are independent.
  plan.events = {ev(PlanEventKind::LinkDown, "tor0-agg0", 100, 200), ev(PlanEventKind::LinkFlap, "tor0-agg0", 200, 203),
                 ev(PlanEventKind::LinkFlap, "tor0-agg1", 150, 153)};
  CHECK_NOTHROW(validate_plan(plan, t));
}

TEST_CASE("fault plan: bad times, slowdowns and retransmit values are errors", "[faults][plan][errors]") {
  auto t = targets();
  FaultPlan plan;
  plan.events = {ev(PlanEventKind::LinkFlap, "tor0-agg0", -1, 2)};
  CHECK_THROWS_WITH(validate_plan(plan, t), Catch::Contains("≥ 0"));
  plan.events = {ev(PlanEventKind::LinkFlap, "tor0-agg0", 5, 5)};
  CHECK_THROWS_WITH(validate_plan(plan, t), Catch::Contains("positive duration"));
  plan.events = {ev(PlanEventKind::LinkFlap, "tor0-agg0", 5, kForever)};
  CHECK_THROWS_WITH(validate_plan(plan, t), Catch::Contains("finite duration"));
  plan.events = {ev(PlanEventKind::GpuSlowdown, "gpu0", 5, 6, 1.5)};
  CHECK_THROWS_WITH(validate_plan(plan, t), Catch::Contains("(0, 1)"));
  plan.events = {ev(PlanEventKind::GpuSlowdown, "gpu0", 5, 6, 0.0)};
  CHECK_THROWS_WITH(validate_plan(plan, t), Catch::Contains("(0, 1)"));
  plan.events = {};
  plan.retransmit.retries = 0;
  CHECK_THROWS_AS(validate_plan(plan, t), FaultError);
  plan.retransmit.retries = 7;
  plan.retransmit.timeout_per_retry_s = -1;
  CHECK_THROWS_AS(validate_plan(plan, t), FaultError);
}
