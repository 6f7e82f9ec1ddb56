// The fluid model of congestion control and PFC (sim/congestion/) against the fluid
// analyses it comes from (docs/congestion.md): DCQCN's fixed point (Zhu et al.
// CoNEXT'16), Swift's delay equilibrium, N:1 incast throughput and fairness, the PFC
// victim's share, PFC storms and link flaps that stall without losing bytes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "sim/congestion/cc_penalty.hpp"
#include "sim/congestion/dcqcn_equations.hpp"
#include "sim/congestion/fluid_model.hpp"
#include "sim/congestion/fluid_scenarios.hpp"
#include "sim/error.hpp"

using namespace twinscale;
using namespace twinscale::sim::congestion;
using topology::CongestionControl;

namespace {

constexpr double kLine = 25e9; // 200 Gb/s

topology::NetworkCcSpec spec_of(CongestionControl cc, bool pfc = true) {
  topology::NetworkCcSpec s;
  s.congestion_control = cc;
  s.pfc.enabled = pfc;
  return s;
}

struct Window {
  double mean_queue = 0;
  double total = 0;
  std::vector<double> per_flow;
};

/// Means over the samples with from_s < t ≤ to_s.
Window window(const FluidResult& r, uint32_t port, double from_s, double to_s) {
  Window w;
  int n = 0;
  for (const auto& s : r.samples) {
    if (s.t_s <= from_s || s.t_s > to_s) continue;
    if (w.per_flow.empty()) w.per_flow.assign(s.throughput.size(), 0);
    w.mean_queue += s.queue[port];
    for (size_t f = 0; f < s.throughput.size(); ++f) w.per_flow[f] += s.throughput[f];
    ++n;
  }
  REQUIRE(n > 0);
  w.mean_queue /= n;
  for (double& x : w.per_flow) {
    x /= n;
    w.total += x;
  }
  return w;
}

} // namespace

TEST_CASE("DCQCN's fixed point: marking grows with the number of flows", "[congestion]") {
  const topology::DcqcnSpec d;
  double last_p = 0;
  for (int n : {1, 2, 4, 8, 16}) {
    const DcqcnFixedPoint fp = dcqcn_fixed_point(d, 1000, kLine, n);
    CHECK(fp.p > last_p);
    CHECK(fp.queue_bytes > d.kmin_bytes);
    CHECK(fp.queue_bytes < d.kmax_bytes);
    // The three equations hold at the point found.
    const DcqcnDerivatives z = dcqcn_derivatives(d, 1000, kLine / n, kLine / n + fp.rt_minus_rc, fp.alpha, fp.p);
    CHECK(std::abs(z.drc) < 1e-6 * kLine / d.tau_s);
    CHECK(std::abs(z.drt) < 1e-6 * kLine / d.tau_s);
    CHECK(std::abs(z.dalpha) < 1e-9 / d.tau_alpha_s);
    last_p = fp.p;
  }
}

TEST_CASE("DCQCN N:1 incast: full throughput, fair shares, queue at the fluid fixed point", "[congestion]") {
  for (int n : {2, 4, 8}) {
    CAPTURE(n);
    const FluidFabric fab = incast_fabric(n, kLine);
    FluidOptions o;
    o.end_s = 0.15;
    o.sample_every_s = 100e-6;
    const FluidResult r = FluidModel(spec_of(CongestionControl::Dcqcn), fab.ports, fab.flows, o).run();
    const Window w = window(r, static_cast<uint32_t>(n), 0.1, 0.15);
    const DcqcnFixedPoint fp = dcqcn_fixed_point(topology::DcqcnSpec{}, 1000, kLine, n);
    CHECK(w.mean_queue == Approx(fp.queue_bytes).epsilon(0.10));
    CHECK(w.total == Approx(kLine).epsilon(0.10));
    for (double x : w.per_flow) CHECK(x == Approx(kLine / n).epsilon(0.10));
    CHECK(r.dropped_bytes == 0);
  }
}

TEST_CASE("DCQCN: a joining flow converges to the fair share instead of jumping", "[congestion]") {
  const FluidFabric fab = incast_fabric(2, kLine, {0, 0.02});
  FluidOptions o;
  o.end_s = 0.2;
  o.sample_every_s = 10e-6;
  const FluidResult r = FluidModel(spec_of(CongestionControl::Dcqcn), fab.ports, fab.flows, o).run();
  // Alone, flow 0 runs at line rate with an empty queue.
  const Window alone = window(r, 2, 0.01, 0.02);
  CHECK(alone.per_flow[0] == Approx(kLine).epsilon(0.01));
  CHECK(alone.mean_queue < 1);
  // After the join the old flow's rate moves gradually: no sample-to-sample step of more
  // than a quarter of the line rate, and it takes more than 10 samples to reach C/2.
  double prev = kLine, biggest_step = 0;
  int samples_to_half = 0;
  bool reached = false;
  for (const auto& s : r.samples) {
    if (s.t_s <= 0.02) continue;
    biggest_step = std::max(biggest_step, std::abs(s.rate[0] - prev));
    prev = s.rate[0];
    if (!reached && s.rate[0] > 0.55 * kLine) ++samples_to_half;
    reached = reached || s.rate[0] <= 0.55 * kLine;
  }
  CHECK(biggest_step < 0.25 * kLine);
  CHECK(samples_to_half > 10);
  // And both end at the fixed point.
  const Window end = window(r, 2, 0.17, 0.2);
  for (double x : end.per_flow) CHECK(x == Approx(kLine / 2).epsilon(0.05));
  CHECK(end.mean_queue == Approx(dcqcn_fixed_point({}, 1000, kLine, 2).queue_bytes).epsilon(0.10));
}

TEST_CASE("Swift N:1 incast: the RTT settles at the scaled delay target", "[congestion]") {
  for (int n : {2, 8}) {
    CAPTURE(n);
    const FluidFabric fab = incast_fabric(n, kLine);
    FluidOptions o;
    o.end_s = 0.03;
    o.sample_every_s = 20e-6;
    const auto spec = spec_of(CongestionControl::Swift);
    const FluidResult r = FluidModel(spec, fab.ports, fab.flows, o).run();
    const Window w = window(r, static_cast<uint32_t>(n), 0.02, 0.03);
    const double rtt = swift_equilibrium_rtt_s(spec.swift, spec.mtu_bytes, kLine, n, 1);
    CHECK(o.base_rtt_s + w.mean_queue / kLine == Approx(rtt).epsilon(0.10));
    CHECK(w.total == Approx(kLine).epsilon(0.05));
    for (double x : w.per_flow) CHECK(x == Approx(kLine / n).epsilon(0.10));
  }
}

TEST_CASE("Hybrid holds the incast queue in ECN's range, far below Swift's, and converges", "[congestion]") {
  const FluidFabric fab = incast_fabric(4, kLine);
  FluidOptions o;
  o.end_s = 0.05;
  o.sample_every_s = 20e-6;
  const FluidResult hybrid = FluidModel(spec_of(CongestionControl::Hybrid), fab.ports, fab.flows, o).run();
  const FluidResult swift = FluidModel(spec_of(CongestionControl::Swift), fab.ports, fab.flows, o).run();
  const Window h = window(hybrid, 4, 0.04, 0.05);
  const Window s = window(swift, 4, 0.04, 0.05);
  CHECK(h.total == Approx(kLine).epsilon(0.05));
  for (double x : h.per_flow) CHECK(x == Approx(kLine / 4).epsilon(0.05));
  CHECK(h.mean_queue > topology::DcqcnSpec{}.kmin_bytes);
  CHECK(h.mean_queue < topology::DcqcnSpec{}.kmax_bytes);
  CHECK(s.mean_queue > 4 * h.mean_queue);
}

TEST_CASE("PFC without CC: the victim sharing a paused uplink gets the incast share C/N", "[congestion]") {
  for (int n : {2, 4}) {
    CAPTURE(n);
    const FluidFabric fab = victim_fabric(n - 1, kLine);
    FluidOptions o;
    o.end_s = 0.03;
    o.sample_every_s = 100e-6;
    const FluidResult r = FluidModel(spec_of(CongestionControl::None), fab.ports, fab.flows, o).run();
    const Window w = window(r, VictimLayout::kBottleneck, 0.01, 0.03);
    CHECK(w.per_flow.back() == Approx(kLine / n).epsilon(0.10)); // slowdown n
    double paused = 0;
    for (double x : r.paused_s) paused += x;
    CHECK(paused > 0);
    CHECK(r.dropped_bytes == 0);
  }
}

TEST_CASE("Without PFC the same incast drops and resends instead of pausing", "[congestion]") {
  const FluidFabric fab = victim_fabric(3, kLine);
  FluidOptions o;
  o.end_s = 0.01;
  auto spec = spec_of(CongestionControl::None, false);
  spec.buffer_bytes = 1e6;
  const FluidResult r = FluidModel(spec, fab.ports, fab.flows, o).run();
  CHECK(r.dropped_bytes > 0);
  CHECK(r.paused_s[VictimLayout::kUplink] == 0);
  CHECK(r.max_queue_bytes[VictimLayout::kBottleneck] <= 1e6 * (1 + 1e-9));
}

TEST_CASE("PFC storm: a receiver that stops draining blocks the victim, which resumes after", "[congestion]") {
  FluidFabric fab = victim_fabric(3, kLine);
  fab.ports[VictimLayout::kBottleneck].capacity_changes = {{0.01, 0.0}, {0.02, 1.0}};
  FluidOptions o;
  o.end_s = 0.03;
  o.sample_every_s = 100e-6;
  const FluidResult r = FluidModel(spec_of(CongestionControl::None), fab.ports, fab.flows, o).run();
  CHECK(window(r, 0, 0.012, 0.02).per_flow.back() == 0); // head-of-line blocked
  CHECK(window(r, 0, 0.025, 0.03).per_flow.back() == Approx(kLine / 4).epsilon(0.10));
  CHECK(r.dropped_bytes == 0);
}

TEST_CASE("A link flap stalls a flow under PFC: it ends one outage later, no byte lost", "[congestion]") {
  for (auto cc : {CongestionControl::None, CongestionControl::Dcqcn, CongestionControl::Hybrid}) {
    CAPTURE(topology::congestion_control_name(cc));
    FluidFabric fab = incast_fabric(1, kLine, {0}, 100e6); // 4 ms at line rate
    FluidOptions o;
    o.end_s = 0.1;
    const double ideal = FluidModel(spec_of(cc), fab.ports, fab.flows, o).run().finish_s[0];
    fab.ports[1].capacity_changes = {{0.001, 0.0}, {0.003, 1.0}};
    const FluidResult r = FluidModel(spec_of(cc), fab.ports, fab.flows, o).run();
    REQUIRE(r.finish_s[0] > 0);
    CHECK(r.delivered_bytes[0] == Approx(100e6));
    CHECK(r.dropped_bytes == 0);
    if (cc == CongestionControl::Dcqcn) {
      // DCQCN also pays for the standing queue the pause left behind: it drains marked,
      // and the rate cuts take a fraction of the outage to recover.
      CHECK(r.finish_s[0] - ideal > 0.002);
      CHECK(r.finish_s[0] - ideal < 0.003);
    } else {
      CHECK(r.finish_s[0] - ideal == Approx(0.002).epsilon(0.10));
    }
  }
}

TEST_CASE("The fluid model refuses paths it cannot run", "[congestion]") {
  std::vector<FluidPort> ports = {{kLine, true, false, {}}, {kLine, true, true, {}}};
  FluidOptions o;
  CHECK_THROWS_AS(FluidModel({}, ports, {{{0, 5}, 0, 0, 1}}, o), sim::SimError);
  CHECK_THROWS_AS(FluidModel({}, ports, {{{0, 1}, 0, 0, 1}, {{1, 0}, 0, 0, 1}}, o), sim::SimError);
  CHECK_THROWS_AS(FluidModel({}, {{0, false, false, {}}}, {}, o), sim::SimError);
}

TEST_CASE("Penalty table: no cost alone or without CC, a transient cost per collision", "[congestion]") {
  CcPenaltyTable none(spec_of(CongestionControl::None), kLine);
  CHECK(none.byte_factor(8, 16e6) == 1);
  CcPenaltyTable dcqcn(spec_of(CongestionControl::Dcqcn), kLine);
  CHECK(dcqcn.byte_factor(1, 16e6) == 1);
  const double two = dcqcn.byte_factor(2, 16.0 * (1 << 20));
  CHECK(two > 1);
  // Above 64 MiB the loss is fixed: the factor falls as 1/bytes.
  const double big = dcqcn.byte_factor(2, 256.0 * (1 << 20)), bigger = dcqcn.byte_factor(2, 1024.0 * (1 << 20));
  CHECK(bigger - 1 == Approx((big - 1) / 4).epsilon(1e-9));
  // The factor is what the fluid model takes: n·S/C + L(n, S).
  const double s = 16.0 * (1 << 20);
  CHECK(two == Approx(1 + dcqcn.loss_s(2, s) * kLine / (2 * s)).epsilon(1e-12));
}

TEST_CASE("DCQCN: after a join the rate gap closes at the rate of the linearised fluid model", "[congestion]") {
  // docs/congestion.md, "Convergence": the gap between two flows decays as e^(−λt),
  // λ from the eigenvalues of one flow's Jacobian at the fixed point. Measured: the time
  // for the gap to fall from 10 % to 1 % of C after flow 1 joins, against ln(10) / λ.
  const DcqcnConvergence cv = dcqcn_convergence({}, 1000, kLine, 2);
  REQUIRE(cv.decay_per_s > 0);
  const FluidFabric fab = incast_fabric(2, kLine, {0, 0.02});
  FluidOptions o;
  o.end_s = 0.4;
  o.sample_every_s = 100e-6;
  const FluidResult r = FluidModel(spec_of(CongestionControl::Dcqcn), fab.ports, fab.flows, o).run();
  double t10 = -1, t1 = -1;
  for (const auto& s : r.samples) {
    if (s.t_s <= 0.021) continue;
    const double gap = std::abs(s.rate[0] - s.rate[1]) / kLine;
    if (t10 < 0 && gap <= 0.10) t10 = s.t_s;
    if (t1 < 0 && gap <= 0.01) t1 = s.t_s;
  }
  REQUIRE(t10 > 0);
  REQUIRE(t1 > t10);
  CHECK(t1 - t10 == Approx(std::log(10.0) / cv.decay_per_s).epsilon(0.10));
}

TEST_CASE("DCQCN hyper increase: after a flow leaves, the other regains line rate far sooner", "[congestion]") {
  // Two flows share the bottleneck; flow 1 (64 MB) ends, flow 0 (long-lived) recovers.
  // Additive increase alone adds R_AI per increase event (~0.1 GB/s per ms here); with
  // hyper increase the step grows once both counters are past F expirations without a
  // cut (docs/congestion.md), so the climb from C/2 to C takes a few ms, not ~100.
  auto recovery_s = [](double rhai) {
    FluidFabric fab = incast_fabric(2, kLine);
    fab.flows[1].bytes = 64e6;
    FluidOptions o;
    o.end_s = 0.4;
    o.sample_every_s = 50e-6;
    o.stop_when_done = false;
    auto spec = spec_of(CongestionControl::Dcqcn);
    spec.dcqcn.rhai_bytes_per_s = rhai;
    const FluidResult r = FluidModel(spec, fab.ports, fab.flows, o).run();
    REQUIRE(r.finish_s[1] > 0);
    for (const auto& s : r.samples)
      if (s.t_s > r.finish_s[1] && s.rate[0] >= 0.95 * kLine) return s.t_s - r.finish_s[1];
    return -1.0;
  };
  const double with = recovery_s(topology::DcqcnSpec{}.rhai_bytes_per_s), without = recovery_s(0);
  REQUIRE(with > 0);
  REQUIRE(without > 0);
  CHECK(with < without / 5);
  // Additive increase alone: R_T climbs R_AI · b per second, b ≈ 1/T + R_C/B events/s,
  // so C/2 takes about (C/2) / (R_AI (1/T + C/(2B))): within a factor 1.5 of that.
  const topology::DcqcnSpec d;
  const double linear = (kLine / 2) / (d.rai_bytes_per_s * (1 / d.timer_s + kLine / (2 * d.byte_counter_bytes)));
  CHECK(without > linear / 1.5);
  CHECK(without < linear * 1.5);
}
