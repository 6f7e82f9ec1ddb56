// Collective timing against closed forms and bandwidth sharing on a bottleneck.
#include <catch2/catch.hpp>

#include "sim/collective_algorithms.hpp"
#include "sim_test_util.hpp"
#include "topology/placement.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

/// n data-parallel ranks, one per server (GPU 0 of each: rail 0), each running one
/// all-reduce of `bytes`.
struct RingCase {
  topology::ClusterSpec spec = tiny_cluster();
  schedules::Schedule schedule;
  std::vector<int64_t> gpus;
  RingCase(int64_t n, double bytes, OpKind kind = OpKind::AllReduce) {
    ProgramBuilder b;
    b.add(collective(kind, GroupKind::Dp, bytes, Stream::DpComm));
    schedule = make_schedule({1, n, 1}, {b.take()}, std::vector<uint32_t>(static_cast<size_t>(n), 0));
    for (int64_t i = 0; i < n; ++i) gpus.push_back(8 * i);
  }
};

} // namespace

TEST_CASE("plan_collective: ring and tree byte counts", "[sim][collectives]") {
  const double S = 8e6;
  auto ring = plan_collective(OpKind::AllReduce, 4, S, CollectiveAlgorithm::Ring);
  REQUIRE(ring.phases.size() == 1);
  CHECK(ring.phases[0].steps == 6);
  CHECK(ring.phases[0].bytes_per_step == Approx(S / 4));
  CHECK(ring.bytes_sent_per_member(4) == Approx(2.0 * 3 / 4 * S));
  auto ag = plan_collective(OpKind::AllGather, 4, S, CollectiveAlgorithm::Ring);
  CHECK(ag.bytes_sent_per_member(4) == Approx(3.0 / 4 * S));
  auto tree = plan_collective(OpKind::AllReduce, 8, S, CollectiveAlgorithm::Tree);
  CHECK(tree.algorithm == CollectiveAlgorithm::Tree);
  CHECK(tree.phases[0].transfers.size() == 2u * 2u * 7u);
  CHECK(tree.phases[0].latency_steps == 6);
  CHECK(plan_collective(OpKind::AllReduce, 1, S, CollectiveAlgorithm::Ring).phases.empty());
  CHECK_THROWS_AS(plan_collective(OpKind::Send, 2, S, CollectiveAlgorithm::Ring), twinscale::sim::SimError);
}

TEST_CASE("ring all-reduce on an idle fabric matches 2(n-1)/n S/B + latency", "[sim][collectives]") {
  const int64_t n = 4;
  const double S = 256e6;
  RingCase c(n, S);
  topology::Fabric fabric(c.spec);
  // Bottleneck: the NIC link at the network efficiency; latency: the longest hop path.
  const double efficiency = 0.9; // an input of this test, not the default
  const double B = c.spec.server.nic_bw_bytes_per_s * efficiency;
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    for (bool aggregate : {true, false}) {
      SimOptions o = exact_options(mode);
      o.network_efficiency = efficiency;
      o.aggregate = aggregate;
      const auto r = simulate(c.schedule, fabric, c.gpus, o);
      const double bw_term = 2.0 * (n - 1) / n * S / B;
      INFO("mode " << to_string(mode) << " aggregate " << aggregate << " t " << r.iteration_time_s);
      CHECK(r.completed);
      CHECK(r.iteration_time_s >= bw_term);
      // latency terms: 2(n-1) steps of at most 5 switch hops
      CHECK(r.iteration_time_s <= bw_term + 2.0 * (n - 1) * 5 * c.spec.switch_spec.latency_s + 1e-9);
    }
  }
}

TEST_CASE("all-gather closed form over NVSwitch inside a server", "[sim][collectives]") {
  const double S = 64e6;
  ProgramBuilder b;
  b.add(collective(OpKind::AllGather, GroupKind::Tp, S, Stream::TpComm));
  auto schedule = make_schedule({8, 1, 1}, {b.take()}, std::vector<uint32_t>(8, 0));
  topology::Fabric fabric(tiny_cluster());
  std::vector<int64_t> gpus{0, 1, 2, 3, 4, 5, 6, 7};
  const double efficiency = 0.8; // an input of this test, not the default
  const double B = fabric.spec().gpu.nvlink_bw_bytes_per_s * efficiency;
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    for (bool aggregate : {true, false}) {
      SimOptions o = exact_options(mode);
      o.nvlink_efficiency = efficiency;
      o.aggregate = aggregate;
      o.channels = 2;
      const auto r = simulate(schedule, fabric, gpus, o);
      INFO("mode " << to_string(mode) << " aggregate " << aggregate);
      CHECK(r.iteration_time_s == Approx(ring_all_gather_seconds(8, S, B, 0)).epsilon(1e-6));
    }
  }
}

TEST_CASE("two flows on one bottleneck link each get half", "[sim][collectives]") {
  // pp ranks 0 and 1 both send S to rank 2: the flows share rank 2's NIC downlink.
  const double S = 100e6;
  auto program = [&](int stage, bool both) {
    ProgramBuilder b;
    if (stage < 2) {
      if (stage == 0 || both) b.add(p2p(OpKind::Send, 2, S, Stream::PpSend));
    } else {
      b.add(p2p(OpKind::Recv, 0, S, Stream::PpRecv));
      if (both) b.add(p2p(OpKind::Recv, 1, S, Stream::DpComm));
    }
    return b.take();
  };
  topology::Fabric fabric(tiny_cluster());
  std::vector<int64_t> gpus{0, 8, 16};
  SimOptions o = exact_options(SimMode::Flow);
  o.network_efficiency = 0.9; // an input of this test, not the default
  auto run = [&](bool both) {
    auto s = make_schedule({1, 1, 3}, {program(0, both), program(1, both), program(2, both)}, {0, 1, 2});
    return simulate(s, fabric, gpus, o).iteration_time_s;
  };
  const double one = run(false), two = run(true);
  const double B = fabric.spec().server.nic_bw_bytes_per_s * *o.network_efficiency;
  CHECK(one == Approx(S / B).epsilon(1e-3));
  CHECK(two == Approx(2 * S / B).epsilon(1e-3));
}

TEST_CASE("nccl_collective_ctas: NCCL's channels, one ring per NIC doubled, 24 inside an NVSwitch server",
          "[sim][collectives]") {
  GroupPlacement one;
  one.server = {0};
  one.nic = {0};
  CHECK(nccl_collective_ctas(one) == 0);
  GroupPlacement server; // 8 GPUs of one server
  for (int64_t g = 0; g < 8; ++g) server.server.push_back(0), server.nic.push_back(g);
  CHECK(nccl_collective_ctas(server) == 24);
  GroupPlacement all8; // all 8 GPUs of 4 servers, each on its own NIC (FSDP on DGX A100)
  GroupPlacement rail; // one GPU of each of 4 servers (data parallelism with TP 8)
  for (int64_t s = 0; s < 4; ++s) {
    for (int64_t g = 0; g < 8; ++g) all8.server.push_back(s), all8.nic.push_back(g);
    rail.server.push_back(s);
    rail.nic.push_back(0);
  }
  CHECK(nccl_collective_ctas(all8) == 16);
  CHECK(nccl_collective_ctas(rail) == 2);
  GroupPlacement wide; // 20 GPUs and NICs a server: capped at NCCL's MAXCHANNELS
  for (int64_t s = 0; s < 2; ++s)
    for (int64_t g = 0; g < 20; ++g) wide.server.push_back(s), wide.nic.push_back(g);
  CHECK(nccl_collective_ctas(wide) == 32);
}
