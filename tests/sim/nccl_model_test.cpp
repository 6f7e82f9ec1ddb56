// NCCL's collective structure and costs: channels across a server's NICs, the protocol
// tuner (LL / LL128 / Simple), flow and analytic modes agreeing, and the section-B
// anchors of ../shared/reference/validation.md (nccl-tests on A100 servers) within 5 %.
#include <catch2/catch.hpp>

#include <set>

#include "config/cluster_file.hpp"
#include "sim/collective_algorithms.hpp"
#include "sim/collective_run.hpp"
#include "sim/detail/network_paths.hpp"
#include "sim/nccl_model.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using schedules::OpKind;

namespace {

/// A DGX A100 fabric (8 × HDR 200G per server, rail-optimised) with `servers` servers.
topology::Fabric dgx(int64_t servers) {
  auto spec = config::load_cluster("dgx-a100-superpod");
  spec.gpus = servers * spec.server.gpus;
  return topology::Fabric(spec);
}

double busbw_gb(const topology::Fabric& f, OpKind kind, int64_t gpus, int64_t per_server, double bytes, SimMode mode,
                SimOptions o = {}) {
  o.mode = mode;
  const auto g = collective_gpus(gpus, per_server, f.spec().server.gpus);
  return run_collective(f, kind, g, bytes, o).busbw_bytes_per_s / 1e9;
}

constexpr double GiB = 1024.0 * 1024 * 1024;

} // namespace

TEST_CASE("rings: one channel per NIC, each entering a server on its own NIC", "[sim][nccl]") {
  GroupPlacement where;
  for (int64_t s = 0; s < 4; ++s)
    for (int64_t l = 0; l < 8; ++l) {
      where.server.push_back(s);
      where.nic.push_back(l);
    }
  const auto plan = plan_collective(OpKind::AllReduce, where, 32e6, CollectiveAlgorithm::Ring, 2);
  CHECK(plan.channels == 8);
  CHECK(plan.servers == 4);
  REQUIRE(plan.phases.size() == 1);
  const auto& p = plan.phases[0];
  CHECK(p.steps == 62);
  CHECK(p.bytes_per_step == Approx(32e6 / 32 / 8));
  CHECK(p.transfers.size() == 8u * 32u);
  // Inter-server transfers: per channel one into every server; over the channels every
  // NIC of a server receives exactly one ring.
  std::set<std::pair<int64_t, int64_t>> entries; // (server, nic) entered
  for (const auto& t : p.transfers) {
    const auto s = where.server[static_cast<size_t>(t.src)], d = where.server[static_cast<size_t>(t.dst)];
    if (s != d) CHECK(entries.insert({d, where.nic[static_cast<size_t>(t.dst)]}).second);
  }
  CHECK(entries.size() == 32u);
  // Bytes on the wire per member: 2(n-1)/n · S, as one ring would.
  CHECK(plan.bytes_sent_per_member(32) == Approx(2.0 * 31 / 32 * 32e6));
  // One GPU per server: the channels asked for; channels asked above the NICs: a multiple.
  CHECK(plan_collective(OpKind::AllReduce, 4, 1e6, CollectiveAlgorithm::Ring).channels == 1);
  CHECK(plan_collective(OpKind::AllGather, where, 1e6, CollectiveAlgorithm::Ring, 12).channels == 16);
  CHECK(max_plan_channels(2, 8) == 8);
  CHECK(max_plan_channels(12, 8) == 16);
}

TEST_CASE("NCCL tuner: LL for small messages, Simple for large, latency from NCCL's constants", "[sim][nccl]") {
  // Step latencies from the catalogue's NVLink3 and ConnectX-6 entries.
  NcclParams p = resolve_nccl({}, config::load_cluster("dgx-a100-superpod"));
  CollectiveShape s{OpKind::AllReduce, false, 8, 1, 8};
  const double busbw = 230e9;
  CHECK(choose_protocol(p, s, 1024, busbw).protocol == NcclProtocol::LL);
  CHECK(choose_protocol(p, s, 1 * GiB, busbw).protocol == NcclProtocol::Simple);
  // One server, LL: 3.6 µs + 14 NVLink steps of 0.47 µs.
  const auto ll = protocol_cost(p, s, NcclProtocol::LL, 1024, busbw);
  CHECK(protocol_latency_s(p, s, ll) == Approx(3.6e-6 + 14 * 0.47e-6));
  CHECK(ll.bw_fraction == Approx(0.25));
  // 4 servers, Simple past the plateau: (8.4 + 56 · 3.4 + 6 · 9.6) µs × 1.9.
  CollectiveShape m{OpKind::AllReduce, false, 32, 4, 8};
  const auto simple = protocol_cost(p, m, NcclProtocol::Simple, 1 * GiB, 192e9);
  CHECK(protocol_latency_s(p, m, simple) == Approx((8.4e-6 + 56 * 3.4e-6 + 6 * 9.6e-6) * 1.9));
  // LL128: 0.92 of the bus bandwidth unless its per-channel ceiling binds.
  CHECK(protocol_cost(p, m, NcclProtocol::LL128, 1e6, 100e9).bw_fraction == Approx(0.92));
  CHECK(protocol_cost(p, m, NcclProtocol::LL128, 1e6, 192e9).bw_fraction == Approx(16.7e9 * 8 / 192e9));
  // Switched off: Simple, no latency.
  p.model_protocols = false;
  const auto off = choose_protocol(p, s, 1024, busbw);
  CHECK(off.protocol == NcclProtocol::Simple);
  CHECK(off.bw_fraction == 1.0);
  CHECK(protocol_latency_s(p, s, off) == 0.0);
}

TEST_CASE("section B anchor: 8 x A100 in one server, all-reduce busbw 220-232 GB/s", "[sim][nccl][anchor]") {
  const auto f = dgx(1);
  const double published = 226; // midpoint of nccl-tests' 220–232 GB/s (hardware.md)
  const double analytic = busbw_gb(f, OpKind::AllReduce, 8, 8, 4 * GiB, SimMode::Analytic);
  const double flow = busbw_gb(f, OpKind::AllReduce, 8, 8, 4 * GiB, SimMode::Flow);
  INFO("analytic " << analytic << " flow " << flow);
  CHECK(std::abs(analytic - published) / published <= 0.05);
  CHECK(flow == Approx(analytic).epsilon(0.01));
}

TEST_CASE("section B anchor: DGX A100 with 8 x HDR, multi-server all-reduce ~192 GB/s per server",
          "[sim][nccl][anchor]") {
  for (int64_t servers : {4, 8}) {
    const auto f = dgx(servers);
    const int64_t n = 8 * servers;
    const double analytic = busbw_gb(f, OpKind::AllReduce, n, 8, 8 * GiB, SimMode::Analytic);
    const double flow = busbw_gb(f, OpKind::AllReduce, n, 8, 8 * GiB, SimMode::Flow);
    INFO(servers << " servers: analytic " << analytic << " flow " << flow);
    CHECK(std::abs(analytic - 192) / 192 <= 0.05);
    CHECK(flow == Approx(analytic).epsilon(0.01));
  }
  // The bug this model fixes: several GPUs per server used one NIC (24.7 GB/s), and
  // asking for more channels changed nothing. Now every NIC carries a ring, and more
  // channels than NICs change nothing either.
  const auto f = dgx(4);
  SimOptions eight;
  eight.channels = 8;
  CHECK(busbw_gb(f, OpKind::AllReduce, 32, 8, 1 * GiB, SimMode::Analytic, eight) ==
        Approx(busbw_gb(f, OpKind::AllReduce, 32, 8, 1 * GiB, SimMode::Analytic)).epsilon(1e-9));
  // One GPU per server: one NIC's worth (~24 GB/s), the per-NIC figure of hardware.md.
  CHECK(busbw_gb(f, OpKind::AllReduce, 4, 1, 1 * GiB, SimMode::Analytic) == Approx(24).epsilon(0.05));
}

TEST_CASE("section B anchor: small messages are latency-bound", "[sim][nccl][anchor]") {
  const auto f = dgx(4);
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    const double small = busbw_gb(f, OpKind::AllReduce, 32, 8, 1024.0 * 1024, mode);
    const double large = busbw_gb(f, OpKind::AllReduce, 32, 8, 1 * GiB, mode);
    INFO("1 MiB " << small << " 1 GiB " << large);
    CHECK(small < 0.25 * large);
    // latency-bound: 8 KiB takes about as long as 1 KiB
    SimOptions o;
    o.mode = mode;
    const auto g = collective_gpus(32, 8, 8);
    const double t1 = run_collective(f, OpKind::AllReduce, g, 1024, o).time_s;
    const double t8 = run_collective(f, OpKind::AllReduce, g, 8192, o).time_s;
    CHECK(t8 < 1.5 * t1);
    CHECK(t1 > 10e-6); // NCCL's step latencies: tens of µs over 32 ranks
  }
}

TEST_CASE("every collective kind: flow and analytic modes agree across servers", "[sim][nccl]") {
  const auto f = dgx(2);
  for (OpKind kind :
       {OpKind::AllReduce, OpKind::AllGather, OpKind::ReduceScatter, OpKind::AllToAll, OpKind::Broadcast}) {
    for (double bytes : {64.0 * 1024, 256.0 * 1024 * 1024}) {
      const double a = busbw_gb(f, kind, 16, 8, bytes, SimMode::Analytic);
      const double fl = busbw_gb(f, kind, 16, 8, bytes, SimMode::Flow);
      INFO(schedules::to_string(kind) << " " << bytes << " B: analytic " << a << " flow " << fl);
      CHECK(a > 0);
      CHECK(fl == Approx(a).epsilon(0.02));
    }
  }
  // Non-aggregated flow mode (every ring step a flow) agrees with the merged flows.
  SimOptions o;
  o.mode = SimMode::Flow;
  const auto g = collective_gpus(16, 8, 8);
  const double merged = run_collective(f, OpKind::AllGather, g, 64e6, o).time_s;
  o.aggregate = false;
  CHECK(run_collective(f, OpKind::AllGather, g, 64e6, o).time_s == Approx(merged).epsilon(0.02));
}

TEST_CASE("run_collective: bad input names what would be valid", "[sim][nccl]") {
  const auto f = dgx(1);
  CHECK_THROWS_AS(run_collective(f, OpKind::Send, {0, 1}, 1e6, {}), twinscale::sim::SimError);
  CHECK_THROWS_AS(run_collective(f, OpKind::AllReduce, {0}, 1e6, {}), twinscale::sim::SimError);
  CHECK_THROWS_AS(run_collective(f, OpKind::AllReduce, {0, 0}, 1e6, {}), twinscale::sim::SimError);
  CHECK_THROWS_AS(run_collective(f, OpKind::AllReduce, {0, 99}, 1e6, {}), twinscale::sim::SimError);
  CHECK_THROWS_AS(collective_gpus(12, 8, 8), twinscale::sim::SimError);
  CHECK_THROWS_AS(collective_gpus(16, 9, 8), twinscale::sim::SimError);
}

TEST_CASE("resolve_nccl: the tuner set of the cluster's GPU generation, overrides win", "[sim][nccl][catalogue]") {
  const auto a100 = config::load_cluster("dgx-a100-superpod");
  const NcclParams p = resolve_nccl({}, a100);
  CHECK(nccl_tuning(p).generation == "Ampere");
  CHECK(nccl_tuning(p).nvlink_ring_step_s[2] == Approx(3.4e-6)); // Simple over NVLink
  CHECK(nccl_tuning(p).net_ring_step_s[1] == Approx(4.0e-6));    // LL128 over the network
  CHECK(nccl_tuning(p).net_tree_step_s[2] == Approx(50e-6));
  const auto h100 = config::load_cluster("h100-400g");
  CHECK(nccl_tuning(resolve_nccl({}, h100)).generation == "Hopper");
  NcclParams set;
  set.ring_net_step_s = PerProtocol{1e-6, 1e-6, 1e-6};
  set.enabled = std::array<bool, kNcclProtocols>{false, false, true};
  const NcclParams r = resolve_nccl(set, h100);
  CHECK(nccl_tuning(r).net_ring_step_s[2] == 1e-6); // an override wins
  CHECK(nccl_tuning(r).net_ring_step_s[0] == 1e-6);
  CHECK(nccl_tuning(r).enabled == std::array<bool, kNcclProtocols>{false, false, true});
  CHECK(nccl_tuning(r).ring_base_latency_s[0] == Approx(6.6e-6)); // the rest stays Hopper's
  NcclParams whole;
  whole.tuning = nccl_tuning(p); // the whole Ampere set on the H100 cluster
  CHECK(nccl_tuning(resolve_nccl(whole, h100)).generation == "Ampere");
}

TEST_CASE("PXN: a transfer to another rail crosses NVLink to the destination's rail first", "[sim][nccl]") {
  // GPU 1 of server 0 (rail 1) to GPU 10 = GPU 2 of server 1 (rail 2): relayed by GPU 2
  // of server 0, whose NIC is on rail 2.
  const auto f = dgx(2);
  detail::NetworkPaths pxn(f, 1, topology::EcmpPolicy::Hash, 0.77, 0.96, true);
  detail::NetworkPaths direct(f, 1, topology::EcmpPolicy::Hash, 0.77, 0.96, false);
  CHECK(pxn.pxn_proxy(1, 10) == 2);
  CHECK(pxn.pxn_proxy(2, 10) == 2); // same rail: no relay
  CHECK(pxn.pxn_proxy(1, 3) == 1);  // same server: NVLink only
  CHECK(direct.pxn_proxy(1, 10) == 1);
  std::vector<topology::Hop> hops;
  pxn.route(1, 10, 0, hops);
  REQUIRE(hops.size() >= 4);
  CHECK(f.links()[hops[0].link].kind == topology::LinkKind::NvLink); // GPU 1 → NVSwitch
  CHECK(f.links()[hops[1].link].kind == topology::LinkKind::NvLink); // NVSwitch → GPU 2
  CHECK(f.links()[hops[2].link].kind == topology::LinkKind::Pcie);   // GPU 2 → its NIC
  int nic_links = 0;
  for (const auto& h : hops)
    if (f.links()[h.link].kind == topology::LinkKind::NicToTor) {
      ++nic_links;
      CHECK(f.links()[h.link].a == f.nic_vertex(f.nic_of_gpu(h.up ? 2 : 10))); // rail 2 at both ends
    }
  CHECK(nic_links == 2);
  // 16 GPUs on 2 servers: every channel on its own rail, ~192 GB/s per server.
  SimOptions a;
  a.mode = SimMode::Analytic;
  const double busbw = run_collective(f, OpKind::AllReduce, collective_gpus(16, 8, 8), 1 * GiB, a).busbw_bytes_per_s;
  CHECK(busbw / 1e9 == Approx(192).epsilon(0.05));
}

TEST_CASE("closed forms: re-used routes give exactly what a fresh model computes", "[sim][nccl]") {
  // A path model answers repeated plans of one group from its cache (MoE all-to-alls
  // with varying bytes): each answer must be bit-identical to a fresh model's, with and
  // without latency, with image groups, and after a link is degraded.
  const auto f = dgx(4);
  detail::NetworkPaths warm(f, 1, topology::EcmpPolicy::Hash, 0.77, 0.96, true);
  const std::vector<int64_t> group{0, 9, 18, 27, 4, 13, 22, 31}; // across servers and rails
  const std::vector<int64_t> image{1, 10, 19, 28, 5, 14, 23, 30};
  GroupPlacement where;
  for (int64_t g : group) {
    where.server.push_back(f.server_of_gpu(g));
    where.nic.push_back(f.nic_of_gpu(g));
  }
  auto check_all = [&](const std::vector<std::vector<int64_t>>& groups, uint32_t degraded) {
    for (OpKind kind : {OpKind::AllToAll, OpKind::AllReduce})
      for (double bytes : {1e3, 3.7e6, 1e3, 2.5e8, 3.7e6}) {
        CollectivePlan plan = plan_collective(kind, where, bytes, CollectiveAlgorithm::Ring, 2);
        apply_protocol(plan, {NcclProtocol::Simple, 1.0}, 20e-6);
        detail::NetworkPaths fresh(f, 1, topology::EcmpPolicy::Hash, 0.77, 0.96, true);
        if (degraded != UINT32_MAX) fresh.degrade_link(degraded, 0.25);
        for (bool lat : {true, false}) {
          const double expect = fresh.closed_form_s(plan, groups, lat);
          CHECK(expect > 0);
          CHECK(warm.closed_form_s(plan, groups, lat, /*reuse_routes=*/true) == expect); // exact, not approximate
        }
      }
  };
  check_all({group}, UINT32_MAX);
  check_all({group, image}, UINT32_MAX);
  CollectivePlan big = plan_collective(OpKind::AllToAll, where, 2.5e8, CollectiveAlgorithm::Ring, 2);
  const double nominal = warm.closed_form_s(big, {group, image}, true, true);
  std::vector<topology::Hop> hops;
  warm.route(0, 9, 0, hops);
  const uint32_t link = hops[hops.size() / 2].link; // on the group's own path
  warm.degrade_link(link, 0.25);
  check_all({group, image}, link);
  CHECK(warm.closed_form_s(big, {group, image}, true, true) > nominal); // the cache forgot the old rates
}

TEST_CASE("closed forms: a group's symmetric images share routed flows, exactly, unless a link is degraded",
          "[sim][nccl]") {
  // An every-rank run computes one closed form per image of a DP group (its tp shifts),
  // each with the same set of groups, its own first. Without a degraded link the model
  // keys the routed flows by the set: every order must give bit-identically what routing
  // that order afresh gives (a model with a link "degraded" by factor 1 routes anew on
  // every call, keeping the first group first), so which image comes first cannot
  // matter. With a degraded link the first group's flows see it and the cache is bypassed.
  const auto f = dgx(4);
  const std::vector<int64_t> group{0, 9, 18, 27, 4, 13, 22, 31}; // across servers and rails
  std::vector<std::vector<int64_t>> images;                      // its tp shifts: each GPU moved by s in its server
  for (int64_t s = 0; s < 8; ++s) {
    std::vector<int64_t> g;
    for (int64_t x : group) g.push_back(x / 8 * 8 + (x % 8 + s) % 8);
    images.push_back(g);
  }
  auto starting_at = [&](size_t first) { // the image set as image `first` sees it
    std::vector<std::vector<int64_t>> out;
    for (size_t i = 0; i < images.size(); ++i) out.push_back(images[(first + i) % images.size()]);
    return out;
  };
  GroupPlacement where;
  for (int64_t g : group) {
    where.server.push_back(f.server_of_gpu(g));
    where.nic.push_back(f.nic_of_gpu(g));
  }
  std::vector<topology::Hop> hops;
  detail::NetworkPaths warm(f, 1, topology::EcmpPolicy::Hash, 0.77, 0.96, true);
  warm.route(0, 9, 0, hops);
  const uint32_t link = hops[hops.size() / 2].link; // on image 0's own path
  detail::NetworkPaths routed(f, 1, topology::EcmpPolicy::Hash, 0.77, 0.96, true);
  routed.degrade_link(link, 1.0); // no bandwidth change, but no shared flows either
  for (OpKind kind : {OpKind::AllReduce, OpKind::AllGather, OpKind::ReduceScatter})
    for (double bytes : {1e3, 3.7e6, 2.5e8})
      for (bool lat : {true, false}) {
        CollectivePlan plan = plan_collective(kind, where, bytes, CollectiveAlgorithm::Ring, 2);
        apply_protocol(plan, {NcclProtocol::Simple, 1.0}, 20e-6);
        const double expect = routed.closed_form_s(plan, starting_at(0), lat);
        CHECK(expect > 0);
        for (size_t first = 0; first < images.size(); ++first) {
          CHECK(routed.closed_form_s(plan, starting_at(first), lat) == expect); // routed afresh in this order
          CHECK(warm.closed_form_s(plan, starting_at(first), lat) == expect);   // from the shared entry
        }
      }
  // degraded: image 0's closed form sees the link, an image whose own flows miss it does not
  CollectivePlan plan = plan_collective(OpKind::AllReduce, where, 2.5e8, CollectiveAlgorithm::Ring, 2);
  const double nominal = warm.closed_form_s(plan, starting_at(0));
  warm.degrade_link(link, 0.25);
  detail::NetworkPaths fresh(f, 1, topology::EcmpPolicy::Hash, 0.77, 0.96, true);
  fresh.degrade_link(link, 0.25);
  bool some_image_unaffected = false;
  for (size_t first = 0; first < images.size(); ++first) {
    const double t = warm.closed_form_s(plan, starting_at(first));
    CHECK(t == fresh.closed_form_s(plan, starting_at(first)));
    some_image_unaffected = some_image_unaffected || t == nominal;
  }
  CHECK(warm.closed_form_s(plan, starting_at(0)) > nominal);
  CHECK(some_image_unaffected);
}
