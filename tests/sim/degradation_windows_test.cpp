// Link degradations in time windows (fault plan link-degraded with at_s / until_s), in
// both modes with every rank executed: an op across a window edge moves its bytes before
// the edge at the old rate and the rest at the new, checked against hand computations;
// in the flow mode a flow that starts inside a window speeds up when it ends (SimGrid's
// CM02 would otherwise keep the degraded bound it started with).
#include <catch2/catch.hpp>

#include <cmath>

#include "faults/fault_plan.hpp"
#include "sim/detail/degradation_windows.hpp"
#include "sim/detail/network_paths.hpp"
#include "sim_test_util.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

/// Rank 0 on GPU 0 sends S bytes to rank 1 on GPU 8 (another server) at t = 0.
struct OneSend {
  topology::ClusterSpec spec = tiny_cluster();
  topology::Fabric fabric{spec};
  schedules::Schedule schedule;
  std::vector<int64_t> gpus{0, 8};
  double S = 200e6;
  OneSend() {
    ProgramBuilder a, b;
    a.add(p2p(OpKind::Send, 1, S, Stream::PpSend));
    b.add(p2p(OpKind::Recv, 0, S, Stream::PpRecv));
    schedule = make_schedule({1, 1, 2}, {a.take(), b.take()}, {0, 1});
  }
  /// GPU 0's NIC uplink (the second hop of its route to GPU 8).
  int64_t nic_link() const {
    std::vector<topology::Hop> hops;
    fabric.route(0, 8, 0, 1, topology::EcmpPolicy::Hash, hops);
    return hops.at(1).link;
  }
  /// The link's bandwidth as the simulator uses it (raw × network efficiency 1).
  double nic_bw() const { return spec.server.nic_bw_bytes_per_s; }
  SimOptions options(SimMode mode) const {
    SimOptions o = exact_options(mode);
    o.network_efficiency = 1.0;
    return o;
  }
  double run(SimMode mode, const faults::FaultPlan* plan) const {
    SimOptions o = options(mode);
    o.faults = plan;
    const auto r = simulate(schedule, fabric, gpus, o);
    REQUIRE(r.completed);
    return r.iteration_time_s;
  }
};

faults::PlanEvent window(int64_t link, double factor, double at_s, double until_s) {
  faults::PlanEvent e;
  e.kind = faults::PlanEventKind::LinkDegraded;
  e.target = "link";
  e.target_index = link;
  e.bandwidth_factor = factor;
  e.at_s = at_s;
  e.until_s = until_s;
  return e;
}

faults::FaultPlan plan_of(std::initializer_list<faults::PlanEvent> events) {
  faults::FaultPlan p;
  p.events = events;
  return p;
}

} // namespace

TEST_CASE("degradation windows: a p2p's closed form across window edges, by hand", "[sim][faults][windows]") {
  OneSend job;
  detail::NetworkPaths paths(job.fabric, 1, topology::EcmpPolicy::Hash, 1.0, 1.0);
  const double B = job.nic_bw();
  const double idle = paths.p2p_s(0, 8, job.S, 1);
  const double L = idle - job.S / B; // the path's latency
  REQUIRE(L > 0);
  REQUIRE(L < 1e-4);
  const auto link = static_cast<uint32_t>(job.nic_link());
  const double T = job.S / B;
  detail::DegradationWindows w(paths, {{link, 0.5, 0.5 * T, 0.75 * T}, {link, 0.25, 2 * T, 3 * T}});
  CHECK(w.factor(link, 0.0) == 1.0);
  CHECK(w.factor(link, 0.5 * T) == 0.5);
  CHECK(w.factor(link, 0.75 * T) == 1.0); // until_s is exclusive
  CHECK(w.factor(link, 2.5 * T) == 0.25);
  // before any window, wholly: the closed form of NetworkPaths
  CHECK(w.p2p_s(0, 8, job.S / 4, 1, 0.0) == paths.p2p_s(0, 8, job.S / 4, 1));
  // from 0: latency, then T/2 − L at B, T/4 at B/2, the rest at B
  const double moved = (0.5 * T - L) * B + 0.25 * T * 0.5 * B;
  CHECK(w.p2p_s(0, 8, job.S, 1, 0.0) == Approx(0.75 * T + (job.S - moved) / B).epsilon(1e-12));
  // started inside the second window: its rest at B/4, then B after 3T
  const double start = 2.5 * T;
  const double in_window = (3 * T - start - L) * 0.25 * B;
  CHECK(w.p2p_s(0, 8, job.S, 1, start) == Approx(3 * T - start + (job.S - in_window) / B).epsilon(1e-12));
  // a transfer wholly inside a window: at B/4
  CHECK(w.p2p_s(0, 8, 0.01 * job.S, 1, 2 * T) == Approx(L + 0.01 * job.S / (0.25 * B)).epsilon(1e-12));
}

TEST_CASE("degradation windows: a send across a window's end in both modes, by hand", "[sim][faults][windows]") {
  OneSend job;
  const double base = job.run(SimMode::Analytic, nullptr);
  const double B = job.nic_bw();
  const double T = job.S / B;
  const double L = base - T;
  const auto link = job.nic_link();
  // [0, T/2) at half: the flow starts degraded and must speed up at T/2 (in CM02 it would
  // keep the bound it started with: L + 2T)
  const auto head = plan_of({window(link, 0.5, 0, 0.5 * T)});
  const double head_expect = 0.5 * T + (job.S - (0.5 * T - L) * 0.5 * B) / B;
  // [T/4, T/2) at a quarter: T/4 · 3/4 longer
  const auto middle = plan_of({window(link, 0.25, 0.25 * T, 0.5 * T)});
  const double middle_expect = base + 0.25 * T * 0.75;
  // after the send: no change
  const auto later = plan_of({window(link, 0.25, 2 * T, 3 * T)});
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    INFO("mode " << to_string(mode));
    CHECK(job.run(mode, nullptr) == Approx(base).epsilon(1e-9));
    CHECK(job.run(mode, &head) == Approx(head_expect).epsilon(1e-6));
    CHECK(job.run(mode, &head) < L + 1.5 * T); // far from the degraded bound's L + 2T
    CHECK(job.run(mode, &middle) == Approx(middle_expect).epsilon(1e-6));
    CHECK(job.run(mode, &later) == Approx(base).epsilon(1e-9));
  }
}

TEST_CASE("degradation windows: a window over the whole run equals a whole-run degradation", "[sim][faults][windows]") {
  OneSend job;
  const auto link = job.nic_link();
  const auto whole = plan_of({window(link, 0.3, 0, faults::kForever)});
  const auto long_window = plan_of({window(link, 0.3, 0, 1e6)});
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    INFO("mode " << to_string(mode));
    CHECK(job.run(mode, &long_window) == Approx(job.run(mode, &whole)).epsilon(1e-9));
  }
}

TEST_CASE("degradation windows: the flow mode refuses them with a congestion-control model",
          "[sim][faults][windows][errors]") {
  OneSend job;
  const auto plan = plan_of({window(job.nic_link(), 0.5, 1e-3, 2e-3)});
  SimOptions o = job.options(SimMode::Flow);
  o.faults = &plan;
  o.network.congestion_control = topology::CongestionControl::Dcqcn;
  CHECK_THROWS_WITH(simulate(job.schedule, job.fabric, job.gpus, o),
                    Catch::Contains("time window") && Catch::Contains("congestion_control"));
}
