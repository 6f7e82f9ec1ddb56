#include <catch2/catch.hpp>

#include "faults/plan_targets.hpp"
#include "faults/plan_timeline.hpp"

using namespace twinscale::faults;

TEST_CASE("plan timeline: flaps stall and resume, long outages fail after the retransmit limit (M13)",
          "[faults][plan]") {
  FaultPlan plan;
  plan.retransmit.timeout_per_retry_s = 1.0;
  plan.retransmit.retries = 5; // 5 s tolerated
  auto ev = [](PlanEventKind k, std::string t, double at, double until, double slow = 0) {
    PlanEvent e;
    e.kind = k;
    e.target = std::move(t);
    e.at_s = at;
    e.until_s = until;
    e.slowdown = slow;
    return e;
  };
  plan.events = {
      ev(PlanEventKind::LinkFlap, "l0", 120, 123),        ev(PlanEventKind::LinkDown, "l1", 100, 130),
      ev(PlanEventKind::LinkFlap, "l1", 130, 131),        ev(PlanEventKind::LinkDown, "l0", 200, kForever),
      ev(PlanEventKind::GpuSlowdown, "g0", 50, 150, 0.1), ev(PlanEventKind::ServerCrash, "s0", 300, kForever)};
  NamedTargets targets({"l0", "l1"}, {"g0"}, {"s0"});
  validate_plan(plan, targets);
  const auto t = plan_timeline(plan);
  std::vector<std::tuple<double, ChangeKind, int64_t>> got;
  for (auto& c : t) got.emplace_back(c.at_s, c.kind, c.target_index);
  const std::vector<std::tuple<double, ChangeKind, int64_t>> want = {
      {50, ChangeKind::GpuSpeed, 0},    {100, ChangeKind::LinkStall, 1},  {105, ChangeKind::LinkFail, 1},
      {120, ChangeKind::LinkStall, 0},  {123, ChangeKind::LinkResume, 0}, {130, ChangeKind::LinkRestore, 1},
      {130, ChangeKind::LinkStall, 1}, // back to back: restore first
      {131, ChangeKind::LinkResume, 1}, {150, ChangeKind::GpuSpeed, 0},   {200, ChangeKind::LinkStall, 0},
      {205, ChangeKind::LinkFail, 0},   {300, ChangeKind::ServerCrash, 0}};
  CHECK(got == want);
  CHECK(t[0].speed_factor == Approx(0.9));
  CHECK(t[8].speed_factor == 1.0);
}
