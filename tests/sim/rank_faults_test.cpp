// Fault-plan kinds that hit single ranks or groups (the diagnosis's ground truth), in both
// modes with every rank executed: a degraded link slows exactly the collectives whose
// route crosses it; jitter adds seeded pauses to one rank's compute.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "faults/fault_plan.hpp"
#include "sim_test_util.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

/// TP 2 × DP 4 on GPUs {0,1}, {8,9}, {16,17}, {24,25}: two DP rings (tp 0 and tp 1) across
/// four servers, after `compute_s` of compute per iteration (two iterations).
struct TwoRings {
  topology::ClusterSpec spec = tiny_cluster();
  topology::Fabric fabric{spec};
  schedules::Schedule schedule;
  std::vector<int64_t> gpus{0, 1, 8, 9, 16, 17, 24, 25};
  double compute_s = 2e-3;
  TwoRings() {
    ProgramBuilder b;
    uint32_t last = 0;
    for (int32_t it = 0; it < 2; ++it) {
      Op c1 = compute(compute_s / 2, spec.gpu.hbm_bw_bytes_per_s);
      Op c2 = compute(compute_s / 2, spec.gpu.hbm_bw_bytes_per_s, schedules::Phase::Backward);
      c1.labels.iteration = c2.labels.iteration = it;
      const uint32_t a = it == 0 ? b.add(c1) : b.add(c1, {last});
      const uint32_t c = b.add(c2, {a});
      Op ar = collective(OpKind::AllReduce, GroupKind::Dp, 256e6, Stream::DpComm);
      ar.labels.iteration = it;
      last = b.add(ar, {c});
    }
    schedule = make_schedule({2, 4, 1}, {b.take()}, std::vector<uint32_t>(8, 0));
  }
  /// The first network link (NIC → ToR) of GPU g's route to GPU g + 8.
  int64_t nic_link(int64_t g) const {
    std::vector<topology::Hop> hops;
    fabric.route(g, g + 8, 0, 1, topology::EcmpPolicy::Hash, hops);
    return hops.at(1).link;
  }
  SimReport run(SimMode mode, const faults::FaultPlan* plan) const {
    SimOptions o = exact_options(mode);
    o.faults = plan;
    return simulate(schedule, fabric, gpus, o);
  }
};

faults::PlanEvent degraded(int64_t link, double factor) {
  faults::PlanEvent e;
  e.kind = faults::PlanEventKind::LinkDegraded;
  e.target = "link";
  e.target_index = link;
  e.bandwidth_factor = factor;
  return e;
}

faults::PlanEvent jitter(int64_t gpu, double probability, double delay_s, uint64_t seed) {
  faults::PlanEvent e;
  e.kind = faults::PlanEventKind::Jitter;
  e.target = "gpu";
  e.target_index = gpu;
  e.probability = probability;
  e.delay_s = delay_s;
  e.seed = seed;
  return e;
}

double own_s(const RankTimes& t) { return t.forward_s + t.backward_s; }

} // namespace

TEST_CASE("a degraded link slows the ring crossing it, not the ring beside it", "[sim][faults][every_rank]") {
  TwoRings job;
  REQUIRE(job.nic_link(0) != job.nic_link(1)); // the two rings leave server 0 by different NICs
  faults::FaultPlan plan;
  plan.events.push_back(degraded(job.nic_link(0), 0.5));
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    INFO("mode " << to_string(mode));
    const auto base = job.run(mode, nullptr);
    const auto r = job.run(mode, &plan);
    REQUIRE(r.completed);
    CHECK_FALSE(r.aggregated); // every rank executed
    // ring tp 0 crosses the link at half its bandwidth: its bandwidth-bound time doubles
    const double base_comm = base.per_rank[0].comm_wait_s, slow_comm = r.per_rank[0].comm_wait_s;
    CHECK(slow_comm / base_comm > 1.85);
    CHECK(slow_comm / base_comm < 2.01);
    // ring tp 1 does not cross it: unchanged (images are not slowed by the other's link)
    CHECK(r.per_rank[1].comm_wait_s == Approx(base.per_rank[1].comm_wait_s).epsilon(1e-6));
    CHECK(own_s(r.per_rank[0]) == Approx(own_s(base.per_rank[0])).epsilon(1e-9));
    CHECK(r.iteration_time_s > base.iteration_time_s);
  }
}

TEST_CASE("jitter pauses one compute op of the rank per drawn iteration, seeded", "[sim][faults][every_rank]") {
  TwoRings job;
  const int64_t rank = 5; // tp 1, dp 2: GPU 17
  faults::FaultPlan always;
  always.events.push_back(jitter(job.gpus[rank], 1.0, 3e-3, 7));
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    INFO("mode " << to_string(mode));
    const auto base = job.run(mode, nullptr);
    const auto r = job.run(mode, &always);
    REQUIRE(r.completed);
    // probability 1: one 3 ms pause in each of the two iterations, on that rank only
    CHECK(own_s(r.per_rank[rank]) == Approx(own_s(base.per_rank[rank]) + 6e-3).epsilon(1e-9));
    for (int64_t other : {0, 1, 4})
      CHECK(own_s(r.per_rank[static_cast<size_t>(other)]) ==
            Approx(own_s(base.per_rank[static_cast<size_t>(other)])).epsilon(1e-9));
    CHECK(r.iteration_time_s > base.iteration_time_s);
  }
  // probability 0.5: the same plan pauses the same iterations; over seeds, some do not
  std::set<long> pauses;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    faults::FaultPlan half;
    half.events.push_back(jitter(job.gpus[rank], 0.5, 3e-3, seed));
    const auto a = job.run(SimMode::Analytic, &half);
    const auto b = job.run(SimMode::Analytic, &half);
    CHECK(own_s(a.per_rank[rank]) == own_s(b.per_rank[rank]));
    const auto base = job.run(SimMode::Analytic, nullptr);
    const double extra = own_s(a.per_rank[rank]) - own_s(base.per_rank[rank]);
    const long n = std::lround(extra / 3e-3);
    CHECK(extra == Approx(3e-3 * static_cast<double>(n)).margin(1e-9));
    pauses.insert(n);
  }
  CHECK(pauses.size() >= 2); // 8 seeds do not all draw the same number of pauses
}

TEST_CASE("the analytic mode runs link-degraded and jitter plans only", "[sim][faults]") {
  TwoRings job;
  faults::FaultPlan plan;
  plan.events.push_back(degraded(job.nic_link(0), 0.5));
  faults::PlanEvent flap;
  flap.kind = faults::PlanEventKind::LinkFlap;
  flap.target = "l";
  flap.target_index = job.nic_link(1);
  flap.at_s = 1e-3;
  flap.until_s = 2e-3;
  plan.events.push_back(flap);
  CHECK_THROWS_WITH(job.run(SimMode::Analytic, &plan),
                    Catch::Contains("need the flow mode") && Catch::Contains("link-degraded and jitter"));
}

TEST_CASE("flow mode link loads: bytes and busy time per link direction, a degraded link moves data slower",
          "[sim][faults][every_rank]") {
  TwoRings job;
  faults::FaultPlan plan;
  plan.events.push_back(degraded(job.nic_link(0), 0.5));
  SimOptions o = exact_options(SimMode::Flow);
  o.link_loads = true;
  o.faults = &plan;
  const auto r = simulate(job.schedule, job.fabric, job.gpus, o);
  REQUIRE(r.completed);
  REQUIRE_FALSE(r.link_loads.empty());
  auto rate_of = [&](int64_t link, bool up) {
    for (const auto& l : r.link_loads)
      if (l.link == static_cast<uint32_t>(link) && l.up == up) return l.bytes / l.busy_s;
    return -1.0;
  };
  for (const auto& l : r.link_loads) {
    CHECK(l.busy_s <= r.makespan_s * (1 + 1e-9));
    CHECK(l.bytes / l.busy_s <= job.fabric.links()[l.link].bw_bytes_per_s * (1 + 1e-6));
  }
  const double slow = rate_of(job.nic_link(0), true), healthy = rate_of(job.nic_link(1), true);
  REQUIRE(slow > 0);
  REQUIRE(healthy > 0);
  CHECK(slow / healthy == Approx(0.5).epsilon(0.05));
  SimOptions off = exact_options(SimMode::Flow);
  CHECK(simulate(job.schedule, job.fabric, job.gpus, off).link_loads.empty()); // off by default
}
