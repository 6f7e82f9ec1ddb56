// Congestion control in the flow engine (sim/congestion/flow_congestion.hpp): a job
// whose flows never share a network link runs exactly as without CC; one whose rings
// collide on ToR uplinks is slower with DCQCN than with max-min sharing alone.
#include <catch2/catch.hpp>

#include <map>
#include <utility>
#include <vector>

#include "sim/congestion/dcqcn_equations.hpp"
#include "sim/congestion/flow_congestion.hpp"
#include "sim/detail/network_paths.hpp"
#include "sim_test_util.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

/// Ring all-reduces of 256 MB over 4 servers of tiny-2tier, one ring per local GPU given.
SimReport run_rings(const std::vector<int64_t>& locals, topology::CongestionControl cc) {
  const auto spec = tiny_cluster();
  const topology::Fabric fabric(spec);
  ProgramBuilder b;
  const auto c = b.add(compute(1e-3, spec.gpu.hbm_bw_bytes_per_s));
  b.add(collective(OpKind::AllReduce, GroupKind::Dp, 256e6, Stream::DpComm), {c});
  const auto tp = static_cast<int64_t>(locals.size());
  std::vector<int64_t> gpus;
  for (int64_t s = 0; s < 4; ++s)
    for (int64_t l : locals) gpus.push_back(s * 8 + l);
  const auto schedule = make_schedule({tp, 4, 1}, {b.take()}, std::vector<uint32_t>(gpus.size(), 0));
  SimOptions o = exact_options(SimMode::Flow);
  o.network.congestion_control = cc;
  return simulate(schedule, fabric, gpus, o);
}

} // namespace

TEST_CASE("Flow engine CC: no shared link, no cost, collisions cost with DCQCN", "[congestion]") {
  using topology::CongestionControl;
  // One ring: every network link carries one flow at a time.
  const double lone = run_rings({0}, CongestionControl::None).iteration_time_s;
  CHECK(run_rings({0}, CongestionControl::Dcqcn).iteration_time_s == Approx(lone).epsilon(1e-12));
  // Four rings on rail 0 (NICs 0, 2, 4, 6): their flows meet on the ToR uplinks.
  const double maxmin = run_rings({0, 2, 4, 6}, CongestionControl::None).iteration_time_s;
  const double dcqcn = run_rings({0, 2, 4, 6}, CongestionControl::Dcqcn).iteration_time_s;
  CHECK(dcqcn > maxmin * 1.001);
  CHECK(dcqcn < maxmin * 1.5);
}

namespace {

using congestion::FlowCongestion;

struct DynamicFixture {
  topology::ClusterSpec spec = tiny_cluster();
  topology::Fabric fabric{spec};
  detail::NetworkPaths paths{fabric, 1, topology::EcmpPolicy::Hash, 0.77, 0.96, true};

  /// The network link directions (2·link + down) of a flow, in path order.
  std::vector<uint32_t> dirs(int64_t src, int64_t dst) const {
    std::vector<topology::Hop> hops;
    paths.route(src, dst, 0, hops);
    std::vector<uint32_t> out;
    for (const auto& h : hops) {
      const auto kind = fabric.links()[h.link].kind;
      if (kind != topology::LinkKind::NvLink && kind != topology::LinkKind::Pcie)
        out.push_back(2 * h.link + (h.up ? 0 : 1));
    }
    return out;
  }
};

topology::NetworkCcSpec dcqcn_spec(double xoff_bytes) {
  topology::NetworkCcSpec s;
  s.congestion_control = topology::CongestionControl::Dcqcn;
  s.pfc.xoff_bytes = xoff_bytes;
  s.pfc.xon_bytes = xoff_bytes / 2;
  return s;
}

} // namespace

TEST_CASE("Flow engine CC: flows that start together on a port take the same penalty, in any order", "[congestion]") {
  DynamicFixture fx;
  // GPU 8 and GPU 16 send to GPU 0 at the same instant: they meet at its ToR's port.
  const auto penalties = [&](bool swap) {
    FlowCongestion cc(fx.paths, dcqcn_spec(512e3));
    const int64_t first = swap ? 16 : 8, second = swap ? 8 : 16;
    cc.join(first, 0, 0);
    cc.join(second, 0, 0); // both joined before either is started (the flow engine's order)
    return std::make_pair(cc.start_bytes(8, 0, 0, 64e6), cc.start_bytes(16, 0, 0, 64e6));
  };
  const auto [a, b] = penalties(false);
  CHECK(a > 64e6 * 1.0001); // the transient of two flows: both pay it
  CHECK(a == b);
  CHECK(penalties(true) == std::make_pair(a, b));
  // A flow that starts alone at its instant and one that joins it later: only the later
  // one meets a collision (on_start = join + start_bytes).
  FlowCongestion cc(fx.paths, dcqcn_spec(512e3));
  CHECK(cc.on_start(8, 0, 0, 64e6) == 64e6);
  CHECK(cc.on_start(16, 0, 0, 64e6) == a);
  CHECK(cc.stats().flows_penalised == 1);
}

TEST_CASE("Flow engine CC: flows that meet at a port wait behind the DCQCN fixed point's queue", "[congestion]") {
  DynamicFixture fx;
  FlowCongestion cc(fx.paths, dcqcn_spec(512e3));
  CHECK_FALSE(cc.may_pause()); // DCQCN's queue stays ≤ Kmax (200 KB) < XOFF
  // GPU 8 (the other server under GPU 0's ToR) and GPU 16 (across the spine) send to GPU
  // 0: they meet at its ToR's port to GPU 0's NIC, from two ingresses.
  const auto a = fx.dirs(8, 0), b = fx.dirs(16, 0);
  REQUIRE(a.back() == b.back());
  REQUIRE(a[a.size() - 2] != b[b.size() - 2]);
  cc.on_start(8, 0, 0, 64e6);
  cc.on_start(16, 0, 0, 64e6);
  const double c = fx.paths.link_bw(a.back() / 2);
  const double q2 = congestion::dcqcn_fixed_point({}, 1000, c, 2).queue_bytes;
  CHECK(q2 > topology::DcqcnSpec{}.kmin_bytes);
  CHECK(cc.on_end(8, 0, 0) == Approx(q2 / c).epsilon(1e-9));
  // Alone, the last flow has no queue to wait behind.
  CHECK(cc.on_end(16, 0, 0) == 0);
  CHECK(cc.stats().flows_queued == 1);
}

TEST_CASE("Flow engine CC: PFC pauses an ingress above XOFF, slowing its victims, until the flows leave",
          "[congestion]") {
  DynamicFixture fx;
  std::vector<std::pair<uint32_t, double>> applied;
  // XOFF below Kmin: every ingress of a port with a standing queue is paused.
  FlowCongestion cc(fx.paths, dcqcn_spec(1e3), [&](uint32_t d, double bw) { applied.emplace_back(d, bw); });
  REQUIRE(cc.may_pause());
  // Incast into GPU 0 from GPUs 8, 16 and 24 (3 flows, ≥ 2 ingresses); the victim
  // leaves GPU 8's NIC like GPU 8's incast flow but goes to GPU 16, away from the incast.
  const std::vector<int64_t> senders = {8, 16, 24};
  for (int64_t s : senders) cc.on_start(s, 0, 0, 64e6);
  const auto victim = fx.dirs(8, 16);
  const auto incast = fx.dirs(8, 0);
  REQUIRE(victim.front() == incast.front()); // the same NIC port
  REQUIRE(victim.back() != incast.back());
  REQUIRE(incast.size() == 2); // GPU 8 → 0 stays under one ToR: NIC port, ToR port to GPU 0
  const uint32_t nic = incast.front(), egress = incast.back();
  // Paused, the NIC port moves at the pace of its one flow, the egress's share C/3.
  const double share = fx.paths.link_bw(egress / 2) / 3;
  CHECK(cc.capacity(nic) == Approx(share).epsilon(1e-12));
  cc.on_start(8, 16, 0, 64e6);
  // Now it carries the victim too: both move at C/3 (max-min alone would give the victim
  // 2C/3).
  CHECK(cc.capacity(nic) == Approx(2 * share).epsilon(1e-12));
  REQUIRE_FALSE(applied.empty());
  CHECK(applied.back().first == nic);
  // Every flow gone: every capacity back to nominal, and what was applied says so too.
  cc.on_end(8, 16, 0);
  for (int64_t s : senders) cc.on_end(s, 0, 0);
  std::map<uint32_t, double> last;
  for (const auto& [d, bw] : applied) last[d] = bw;
  for (const auto& [d, bw] : last) {
    CAPTURE(d);
    CHECK(bw == fx.paths.link_bw(d / 2));
    CHECK(cc.capacity(d) == fx.paths.link_bw(d / 2));
  }
  CHECK(cc.stats().most_paused >= 1);
}

TEST_CASE("Flow engine CC: a PFC victim moves at the incast's pace while it lasts, then at line rate", "[congestion]") {
  // Stages 1, 2, 3 (GPUs 8, 16, 24) each send S to stage 0 (GPU 0): an incast of three
  // at GPU 0's ToR port. Stage 1 also sends 4S to stage 2 (the victim), through the
  // same NIC port as its incast flow. Max-min sharing gives the victim 2C/3 during the
  // incast (3S/C): done at (3S/C) + (4S − 2S)/C = 5S/C. Under PFC its NIC is paused to
  // the incast's pace: C/3 until 3S/C, then C: done at 3S/C + (4S − S)/C = 6S/C.
  const double S = 64e6;
  auto program = [&](int stage) {
    ProgramBuilder b;
    if (stage == 0) {
      b.add(p2p(OpKind::Recv, 1, S, Stream::PpRecv));
      b.add(p2p(OpKind::Recv, 2, S, Stream::TpComm));
      b.add(p2p(OpKind::Recv, 3, S, Stream::DpComm));
    } else {
      b.add(p2p(OpKind::Send, 0, S, Stream::PpSend));
      if (stage == 1) b.add(p2p(OpKind::Send, 2, 4 * S, Stream::DpComm));
      if (stage == 2) b.add(p2p(OpKind::Recv, 1, 4 * S, Stream::DpComm));
    }
    return b.take();
  };
  // No latency: SimGrid's CM02 shares a link in inverse proportion to each flow's
  // latency (RTT unfairness), DCQCN's fixed point shares it equally; without latency
  // both give C/3 to each incast flow.
  auto spec = tiny_cluster();
  spec.switch_spec.latency_s = 0;
  spec.fabric.cable_latency_s = 0;
  const topology::Fabric fabric(spec);
  const std::vector<int64_t> gpus{0, 8, 16, 24};
  auto run = [&](double xoff) {
    std::vector<schedules::Program> programs;
    for (int s = 0; s < 4; ++s) programs.push_back(program(s));
    const auto schedule = make_schedule({1, 1, 4}, std::move(programs), {0, 1, 2, 3});
    SimOptions o = exact_options(SimMode::Flow);
    o.network = dcqcn_spec(xoff);
    o.network.dcqcn.rai_bytes_per_s = 5e9 / 8; // a fast recovery: the collision's transient stays small
    return simulate(schedule, fabric, gpus, o).iteration_time_s;
  };
  const double plain = run(512e3), paused = run(1e3);
  CHECK(paused / plain == Approx(6.0 / 5).epsilon(0.03));
  CHECK(run(1e3) == paused); // deterministic
}
