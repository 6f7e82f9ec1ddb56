#include <catch2/catch.hpp>

#include "tests/topology/helpers.hpp"
#include "topology/analysis.hpp"
#include "topology/graph_view.hpp"

using namespace twinscale::topology;
using twinscale::topology::test::preset_fabric;

// Hand calculation for megascale-ampere at 12,288 GPUs (M10):
//  servers = 12288 / 8 = 1536; Tomahawk-4 radix 64 at 1:1 → 32 down + 32 up ports.
//  Split downlinks: 32 × 400G ports = 64 × 200G NIC ports → 64 servers per ToR per rail.
//  groups = 1536 / 64 = 24; ToRs = 24 × 8 rails = 192.
//  Aggregation: 32 down + 32 up; a pod = one rail's ToRs of ≤ 32 groups → 1 block,
//  8 pods (one per rail) × 32 aggs (one per ToR uplink) = 256 aggs.
//  Spines: 32 planes (agg index); 8 pods × 32 uplinks = 256 links per plane over
//  64-port spines → 4 spines per plane, 8 parallel links agg→spine; 32 × 4 = 128 spines.
//  Switches: 192 + 256 + 128 = 576.
//  Links: NVLink 12288, PCIe 12288, NIC–ToR 12288, ToR–agg 192 × 32 = 6144,
//  agg–spine 256 × 32 = 8192 → 51200.
//  Capacity per direction: NICs 12288 × 25 GB/s = 307.2 TB/s; ToR up 6144 × 50 GB/s =
//  307.2 TB/s; agg up 8192 × 50 GB/s = 409.6 TB/s → bisection = 307.2 / 2 = 153.6 TB/s.
//  Diameter: GPU–NIC–ToR–agg–spine–agg–ToR–NIC–GPU = 8 links (5 switches).
TEST_CASE("analysis: megascale-ampere at 12,288 GPUs matches the hand calculation", "[analysis]") {
  const Fabric f = preset_fabric("megascale-ampere", 12288);
  const FabricAnalysis a = analyze(f);
  CHECK(a.servers == 1536);
  CHECK(f.shape().servers_per_tor == 64);
  CHECK(f.shape().tor_down_ports == 32);
  CHECK(f.shape().tor_down_ports_used == 32);
  CHECK(a.tors == 192);
  CHECK(a.aggs == 256);
  CHECK(a.spines == 128);
  CHECK(f.shape().links_per_spine == 8);
  CHECK(a.switches == 576);
  CHECK(a.links == 51200);
  REQUIRE(a.links_by_kind.size() == 5);
  CHECK(a.links_by_kind[0].links == 12288);
  CHECK(a.links_by_kind[2].kind == LinkKind::NicToTor);
  CHECK(a.links_by_kind[2].bw_bytes_per_s == Approx(25e9));
  CHECK(a.links_by_kind[3].links == 6144);
  CHECK(a.links_by_kind[4].links == 8192);
  CHECK(a.bisection_bw_bytes_per_s == Approx(153.6e12));
  CHECK(a.diameter_links == 8);
  CHECK(a.route_diameter_links == 8);
  REQUIRE(a.tiers_summary.size() == 3);
  CHECK(a.tiers_summary[1].oversubscription == Approx(1.0));
  CHECK(a.tiers_summary[2].oversubscription == Approx(24.0 / 32.0));
  REQUIRE(a.rails_summary.size() == 8);
  for (const RailSummary& r : a.rails_summary) {
    CHECK(r.nics == 1536);
    CHECK(r.tors == 24);
    CHECK(r.aggs == 32);
    CHECK(r.plane_components == 1); // same-rail traffic never needs a spine
  }
}

TEST_CASE("analysis: the aggregation and spine tiers are sized to the populated pods", "[analysis]") {
  // megascale-ampere with 256 GPUs: 32 servers = 1 group → 8 ToRs, 8 pods of one ToR.
  // A ToR's 32 uplinks fit one aggregation switch (32 down ports) → 1 agg per pod with
  // 32 parallel links; 1 spine plane: 8 aggs × 32 uplinks = 256 links → 4 spines.
  const Fabric f = preset_fabric("megascale-ampere", 256);
  const FabricAnalysis a = analyze(f);
  CHECK(f.shape().aggs_per_pod == 1);
  CHECK(f.shape().links_per_agg == 32);
  CHECK(a.tors == 8);
  CHECK(a.aggs == 8);
  CHECK(a.spines == 4);
  CHECK(f.shape().links_per_spine == 8);
  CHECK(a.bisection_bw_bytes_per_s == Approx(256 * 25e9 / 2));
  // route() sends cross-rail traffic over the spine (8 links); the graph has a shorter
  // way through the NVSwitch to a GPU of the destination's rail (6 links, as PXN does).
  CHECK(a.route_diameter_links == 8);
  CHECK(a.diameter_links == 6);
  // at 12,288 GPUs a pod holds 24 ToRs: 24 × 32 links need all 32 aggs, 1 link each
  CHECK(preset_fabric("megascale-ampere", 12288).shape().links_per_agg == 1);
}

TEST_CASE("analysis: single-rail unsplit halves the servers' share of the ToR", "[analysis]") {
  const FabricAnalysis a = analyze(preset_fabric("megascale-ampere-single-rail", 12288));
  // 4 servers per ToR → 384 ToRs; 200G NICs on whole 400G ports: ToR down:up = 0.5
  CHECK(a.tors == 384);
  CHECK(a.tiers_summary[1].oversubscription == Approx(0.5));
  CHECK(a.bisection_bw_bytes_per_s == Approx(153.6e12));
  CHECK(a.bisection_limited_by == "server NICs");
  // 384 groups / 32 ToRs per pod = 12 pods, joined only through the spines
  CHECK(a.aggs == 12 * 32);
  REQUIRE(a.rails_summary.size() == 1);
  CHECK(a.rails_summary[0].plane_components == 12);
}

TEST_CASE("analysis: graph BFS diameter agrees with route() on the small fabrics", "[analysis]") {
  const FabricAnalysis two = analyze(preset_fabric("tiny-2tier"));
  CHECK(two.diameter_links == 6);
  CHECK(two.route_diameter_links == 6);
  const FabricAnalysis three = analyze(preset_fabric("tiny-3tier"));
  CHECK(three.diameter_links == 8);
  CHECK(three.switches == 8 + 8 + 4);
  // two blocks: a rail's NICs are split over two pods, joined only through spines
  for (const RailSummary& r : three.rails_summary) CHECK(r.plane_components == 2);
}

TEST_CASE("graph view: two directed edges per link", "[analysis]") {
  const Fabric f = preset_fabric("tiny-2tier");
  const FabricGraph g = make_graph_view(f);
  CHECK(boost::num_vertices(g) == f.vertices().size());
  CHECK(boost::num_edges(g) == 2 * f.links().size());
}

TEST_CASE("analysis: 16,384 GPUs fill one block of megascale-ampere exactly", "[analysis]") {
  // 2,048 servers = 32 groups = 32 ToRs per rail pod (the aggregation down ports)
  const Fabric f = preset_fabric("megascale-ampere", 16384);
  const FabricAnalysis a = analyze(f);
  CHECK(f.shape().blocks == 1);
  CHECK(a.tors == 256);
  CHECK(a.aggs == 256);
  CHECK(a.spines == 128);
  CHECK(a.tiers_summary[2].oversubscription == Approx(1.0));
  CHECK(a.bisection_bw_bytes_per_s == Approx(16384 * 25e9 / 2));
  CHECK(a.diameter_links == 8);
}

TEST_CASE("analysis: dgx-a100-superpod preset", "[analysis]") {
  // 140 servers, 20 per leaf (40 × 200G at 1:1, whole ports) → 7 groups × 8 rails = 56
  // ToRs; 8 rail pods of 7 ToRs × 20 uplinks over 20-down aggs → 10 aggs per pod with 2
  // links each = 80; 10 planes: 8 pods × 20 uplinks on 40-port spines → 4 spines, 5 links.
  const FabricAnalysis a = analyze(preset_fabric("dgx-a100-superpod"));
  CHECK(a.servers == 140);
  CHECK(a.tors == 56);
  CHECK(a.aggs == 80);
  CHECK(a.spines == 40);
  CHECK(a.bisection_bw_bytes_per_s == Approx(1120 * 25e9 / 2));
}

TEST_CASE("analysis: the largest megascale-ampere fabric (131,072 GPUs)", "[analysis][slow]") {
  const Fabric f = preset_fabric("megascale-ampere", 131072);
  const FabricAnalysis a = analyze(f);
  CHECK(f.shape().blocks == 8);
  CHECK(f.shape().pods == 64);
  CHECK(a.tors == 2048);
  CHECK(a.aggs == 2048);
  CHECK(a.spines == 32 * 32); // 64 pods × 32 uplinks per plane = 2,048 links / 64 ports
  CHECK(f.shape().links_per_spine == 1);
  CHECK(a.diameter_links == 8);
  std::vector<Hop> path;
  for (int64_t g = 0; g < f.gpus(); g += 997) {
    f.route(g, f.gpus() - 1 - g, static_cast<uint64_t>(g), 1, EcmpPolicy::Hash, path);
    REQUIRE(twinscale::topology::test::walk(f, g, path) == f.gpu_vertex(f.gpus() - 1 - g));
  }
}
