// Fault plans in the flow mode (M13): a short link flap stalls the ring and lengthens the
// iteration by about its duration; a long outage fails the collective and the job; a
// slowed GPU slows its stage; a server crash stops the job at that time.
#include <catch2/catch.hpp>

#include "faults/fault_plan.hpp"
#include "sim_test_util.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

struct RingJob {
  topology::ClusterSpec spec = tiny_cluster();
  topology::Fabric fabric{spec};
  schedules::Schedule schedule;
  std::vector<int64_t> gpus{0, 8, 16, 24};
  double compute_s = 2e-3;
  RingJob() {
    ProgramBuilder b;
    const auto c = b.add(compute(compute_s, spec.gpu.hbm_bw_bytes_per_s));
    b.add(collective(OpKind::AllReduce, GroupKind::Dp, 256e6, Stream::DpComm), {c});
    schedule = make_schedule({1, 4, 1}, {b.take()}, {0, 0, 0, 0});
  }
  /// The NIC–ToR link of GPU 0 (second hop of its route to GPU 8).
  int64_t nic_link() const {
    std::vector<topology::Hop> hops;
    fabric.route(0, 8, 0, 1, topology::EcmpPolicy::Hash, hops);
    return hops.at(1).link;
  }
  SimReport run(const faults::FaultPlan* plan) const {
    SimOptions o = exact_options(SimMode::Flow);
    o.faults = plan;
    return simulate(schedule, fabric, gpus, o);
  }
};

faults::PlanEvent event(faults::PlanEventKind kind, int64_t target, double at, double until) {
  faults::PlanEvent e;
  e.kind = kind;
  e.target = "test";
  e.target_index = target;
  e.at_s = at;
  e.until_s = until;
  return e;
}

} // namespace

TEST_CASE("a link flap shorter than the retransmit limit stalls the ring, then it resumes", "[sim][faults]") {
  RingJob job;
  const auto base = job.run(nullptr);
  faults::FaultPlan plan;
  plan.events.push_back(event(faults::PlanEventKind::LinkFlap, job.nic_link(), 5e-3, 15e-3));
  const auto r = job.run(&plan);
  CHECK(r.completed);
  CHECK(r.iteration_time_s == Approx(base.iteration_time_s + 10e-3).epsilon(1e-3));
  REQUIRE_FALSE(r.incidents.empty());
  CHECK_FALSE(r.incidents[0].failed);
  CHECK(r.incidents[0].stalled_s == Approx(10e-3).epsilon(1e-3));
}

TEST_CASE("a flow that starts during a flap waits for its end, then runs at full speed", "[sim][faults]") {
  RingJob job; // the ring starts after 2 ms of compute, inside the flap
  const auto base = job.run(nullptr);
  faults::FaultPlan plan;
  plan.events.push_back(event(faults::PlanEventKind::LinkFlap, job.nic_link(), 1e-3, 4e-3));
  const auto r = job.run(&plan);
  CHECK(r.completed);
  CHECK(r.iteration_time_s == Approx(base.iteration_time_s + 2e-3).epsilon(1e-3));
  REQUIRE_FALSE(r.incidents.empty());
  CHECK(r.incidents[0].stalled_s == Approx(2e-3).margin(1e-5)); // minus the restored ring latency
}

TEST_CASE("a link outage longer than the retransmit limit fails the job", "[sim][faults]") {
  RingJob job;
  faults::FaultPlan plan;
  plan.events.push_back(event(faults::PlanEventKind::LinkDown, job.nic_link(), 5e-3, faults::kForever));
  const auto r = job.run(&plan);
  CHECK_FALSE(r.completed);
  CHECK(r.failure.find("retransmit") != std::string::npos);
  CHECK(r.makespan_s == Approx(5e-3 + plan.retransmit.tolerated_outage_s()).epsilon(1e-6));
  bool failed = false;
  for (const auto& i : r.incidents) failed = failed || i.failed;
  CHECK(failed);
}

TEST_CASE("a slowed GPU lengthens its compute, a crashed server stops the job", "[sim][faults]") {
  RingJob job;
  const auto base = job.run(nullptr);
  faults::FaultPlan slow;
  auto e = event(faults::PlanEventKind::GpuSlowdown, 16, 0, 1.0);
  e.slowdown = 0.5;
  slow.events.push_back(e);
  const auto r = job.run(&slow);
  CHECK(r.completed);
  // compute of 2 ms at half speed: the ring starts 2 ms later
  CHECK(r.iteration_time_s == Approx(base.iteration_time_s + job.compute_s).epsilon(1e-3));

  faults::FaultPlan crash;
  crash.events.push_back(event(faults::PlanEventKind::ServerCrash, 1, 1e-3, faults::kForever));
  const auto c = job.run(&crash);
  CHECK_FALSE(c.completed);
  CHECK(c.makespan_s == Approx(1e-3));
  CHECK(c.failure.find("crashed") != std::string::npos);
}

TEST_CASE("fault plans with timed events are refused in the analytic mode", "[sim][faults]") {
  RingJob job;
  faults::FaultPlan plan; // (link-degraded and jitter run in both modes: rank_faults_test.cpp)
  plan.events.push_back(event(faults::PlanEventKind::LinkFlap, job.nic_link(), 5e-3, 15e-3));
  SimOptions o = exact_options(SimMode::Analytic);
  o.faults = &plan;
  CHECK_THROWS_AS(simulate(job.schedule, job.fabric, job.gpus, o), twinscale::sim::SimError);
}
