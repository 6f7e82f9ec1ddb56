#include <catch2/catch.hpp>

#include <algorithm>

#include "tests/topology/helpers.hpp"
#include "topology/ecmp_analysis.hpp"

using namespace twinscale::topology;
using twinscale::topology::test::preset_fabric;

TEST_CASE("ecmp (M11): split downlinks + multi-rail lower the worst collision factor", "[ecmp]") {
  // DP ring traffic of a 3D-parallel job (TP 8, DP 16, PP 8 = 1,024 GPUs) placed
  // linearly; one ring step: every rank sends to its DP successor at once.
  const JobShape job{8, 16, 8};
  const Fabric multi = preset_fabric("megascale-ampere", 12288);
  const Fabric single = preset_fabric("megascale-ampere-single-rail", 12288);
  const auto flows_multi = dp_ring_flows(job, place(multi, job, PlacementPolicy::Linear, 0), 64e6);
  const auto flows_single = dp_ring_flows(job, place(single, job, PlacementPolicy::Linear, 0), 64e6);
  REQUIRE(flows_multi.size() == 1024);
  for (uint64_t seed = 0; seed < 8; ++seed) {
    const EcmpReport m = analyze_ecmp(multi, flows_multi, EcmpPolicy::Hash, seed);
    const EcmpReport s = analyze_ecmp(single, flows_single, EcmpPolicy::Hash, seed);
    INFO("seed " << seed << ": multi-rail " << m.worst_collision_factor << " (" << multi.link_name(m.worst_link)
                 << "), single-rail " << s.worst_collision_factor << " (" << single.link_name(s.worst_link) << ")");
    // 64 servers per ToR: every ring neighbour shares the rail's ToR, no hashing at all.
    CHECK(m.worst_collision_factor == Approx(1.0));
    CHECK(m.max_flows_on_link == 1);
    // 4 servers per ToR: the ring leaves the ToR and hashing collides ≥ 3 flows somewhere.
    CHECK(s.worst_collision_factor >= 1.5);
    CHECK(s.worst_collision_factor > m.worst_collision_factor);
  }
  // The fluid bound has no collisions on either fabric.
  CHECK(analyze_ecmp(single, flows_single, EcmpPolicy::IdealSpread, 0).worst_collision_factor == Approx(1.0));
}

TEST_CASE("ecmp: hashing is never better than the ideal spread", "[ecmp]") {
  const Fabric f = preset_fabric("tiny-3tier");
  const JobShape job{2, 8, 4};
  const auto flows = dp_ring_flows(job, place(f, job, PlacementPolicy::Random, 5), 1e6);
  const EcmpReport ideal = analyze_ecmp(f, flows, EcmpPolicy::IdealSpread, 0);
  for (uint64_t seed = 0; seed < 16; ++seed)
    CHECK(analyze_ecmp(f, flows, EcmpPolicy::Hash, seed).worst_collision_factor >= ideal.worst_collision_factor - 1e-9);
}

TEST_CASE("ecmp: loads conserve bytes and are deterministic", "[ecmp]") {
  const Fabric f = preset_fabric("tiny-2tier");
  const JobShape job{4, 4, 2};
  const auto flows = dp_ring_flows(job, place(f, job, PlacementPolicy::Linear, 0), 1000);
  REQUIRE(flows.size() == 32);
  for (EcmpPolicy p : {EcmpPolicy::Hash, EcmpPolicy::IdealSpread}) {
    const EcmpReport a = analyze_ecmp(f, flows, p, 9), b = analyze_ecmp(f, flows, p, 9);
    REQUIRE(a.loads.size() == b.loads.size());
    double nic_up_bytes = 0;
    for (size_t i = 0; i < a.loads.size(); ++i) {
      CHECK(a.loads[i].link == b.loads[i].link);
      CHECK(a.loads[i].bytes == b.loads[i].bytes);
      if (f.links()[a.loads[i].link].kind == LinkKind::Pcie && a.loads[i].up) nic_up_bytes += a.loads[i].bytes;
    }
    // every network flow crosses its source PCIe link once, whole
    CHECK(nic_up_bytes == Approx(1000.0 * static_cast<double>(a.network_flows)));
  }
  const auto pp = pp_neighbour_flows(job, place(f, job, PlacementPolicy::Linear, 0), 1);
  CHECK(pp.size() == 16);
}

TEST_CASE("ecmp (M11): each of split downlinks and multi-rail wiring cuts the hashed traffic", "[ecmp]") {
  // megascale-ampere's servers and switches in four wirings; TP 8, DP 64, PP 8 placed
  // linearly; one DP ring step.
  struct Wiring {
    int64_t rails;
    bool split;
    int64_t servers_per_tor; // what a ToR's 32 down ports hold
  };
  const JobShape job{8, 64, 8};
  std::vector<int64_t> leaving;
  std::vector<double> worst;
  for (Wiring w : {Wiring{8, true, 64}, Wiring{8, false, 32}, Wiring{1, true, 8}, Wiring{1, false, 4}}) {
    ClusterSpec spec = twinscale::config::load_cluster("megascale-ampere");
    spec.server.rails = w.rails;
    spec.fabric.split_downlinks = w.split;
    spec.fabric.servers_per_tor = w.servers_per_tor;
    const Fabric f(spec);
    const auto flows = dp_ring_flows(job, place(f, job, PlacementPolicy::Linear, 0), 1e6);
    double w_max = 0;
    int64_t n = -1;
    for (uint64_t seed = 0; seed < 10; ++seed) {
      const EcmpReport r = analyze_ecmp(f, flows, EcmpPolicy::Hash, seed);
      w_max = std::max(w_max, r.worst_collision_factor);
      n = r.flows_leaving_tor;
    }
    leaving.push_back(n);
    worst.push_back(w_max);
  }
  // Flows that must be hashed over ToR uplinks: 1,024 (single-rail, unsplit) → 512
  // (split: 8 servers per ToR) and 128 (multi-rail: 32 servers per rail ToR) → 0 (both).
  CHECK(leaving == std::vector<int64_t>{0, 128, 512, 1024});
  // Multi-rail keeps every flow of the ring step collision-free; single-rail does not.
  CHECK(worst[0] == Approx(1.0));
  CHECK(worst[1] == Approx(1.0));
  CHECK(worst[2] > 1.0);
  CHECK(worst[3] > 1.0);
}
