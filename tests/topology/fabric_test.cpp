#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "tests/topology/helpers.hpp"

using namespace twinscale::topology;
using twinscale::topology::test::preset_fabric;
using twinscale::topology::test::walk;

TEST_CASE("tiny-2tier: counts follow the Clos arithmetic", "[fabric]") {
  const Fabric f = preset_fabric("tiny-2tier");
  const ClosShape& s = f.shape();
  CHECK(f.gpus() == 32);
  CHECK(f.servers() == 4);
  CHECK(s.tor_down_ports == 4);
  CHECK(s.tor_up_ports == 4);
  CHECK(s.server_groups == 2);
  CHECK(s.tors == 4);
  CHECK(s.spines == 2);
  CHECK(s.links_per_spine == 2);
  // 32 NVLink + 32 PCIe + 32 NIC–ToR + 4 ToRs × 4 uplinks
  CHECK(f.links().size() == 32 + 32 + 32 + 16);
  CHECK(f.vertices().size() == 32 + 4 + 32 + 4 + 2);
}

TEST_CASE("tiny-3tier: counts follow the Clos arithmetic", "[fabric]") {
  const Fabric f = preset_fabric("tiny-3tier");
  const ClosShape& s = f.shape();
  CHECK(s.tors == 8);
  CHECK(s.blocks == 2);
  CHECK(s.pods == 4);
  // pods hold 2 ToRs × 4 uplinks = 8 links ≤ 4 agg down ports × 2 aggs → 2 aggs per
  // pod with 2 parallel links from each ToR
  CHECK(s.aggs_per_pod == 2);
  CHECK(s.links_per_agg == 2);
  CHECK(s.aggs == 8);
  CHECK(s.spine_planes == 2);
  // a plane: 4 pods × 4 agg uplinks = 16 links over 8-port spines → 2 spines, 2 links each
  CHECK(s.spines_per_plane == 2);
  CHECK(s.spines == 4);
  CHECK(s.links_per_spine == 2);
  CHECK(f.links().size() == 64 + 64 + 64 + 8 * 4 + 8 * 4);
}

TEST_CASE("wiring: GPU i uses NIC i mod nics on rail nic mod rails", "[fabric]") {
  const Fabric f = preset_fabric("tiny-2tier");
  // server 3 = group 1; GPU 5 → NIC 5 → rail 1 → ToR 1·2 + 1 = 3
  const int64_t g = 3 * 8 + 5;
  CHECK(f.server_of_gpu(g) == 3);
  CHECK(f.nic_of_gpu(g) == 3 * 8 + 5);
  CHECK(f.rail_of_gpu(g) == 1);
  CHECK(f.tor_of_gpu(g) == 3);
  CHECK(f.vertex_name(f.tor_vertex(3)) == "tor1.r1");
}

TEST_CASE("route: every path is connected and ends at the destination", "[fabric][ecmp]") {
  for (const char* name : {"tiny-2tier", "tiny-3tier"}) {
    const Fabric f = preset_fabric(name);
    std::vector<Hop> path;
    for (int64_t s = 0; s < f.gpus(); ++s)
      for (int64_t d = 0; d < f.gpus(); ++d)
        for (EcmpPolicy p : {EcmpPolicy::Hash, EcmpPolicy::IdealSpread}) {
          f.route(s, d, static_cast<uint64_t>(s * 7 + d), 42, p, path);
          INFO(name << " " << s << " → " << d);
          REQUIRE(walk(f, s, path) == f.gpu_vertex(d));
          if (s == d)
            CHECK(path.empty());
          else if (f.server_of_gpu(s) == f.server_of_gpu(d))
            CHECK(path.size() == 2);
          else if (f.tor_of_gpu(s) == f.tor_of_gpu(d))
            CHECK(path.size() == 4);
        }
  }
}

TEST_CASE("route: hop counts by distance on a 3-tier fabric", "[fabric]") {
  const Fabric f = preset_fabric("tiny-3tier");
  std::vector<Hop> path;
  f.route(0, 16, 1, 0, EcmpPolicy::Hash, path); // server 0 → server 2, same rail, same pod
  CHECK(path.size() == 6);
  f.route(0, 32, 1, 0, EcmpPolicy::Hash, path); // server 0 → server 4: other block
  CHECK(path.size() == 8);
  f.route(0, 9, 1, 0, EcmpPolicy::Hash, path); // rail 0 → rail 1 of the neighbour server
  CHECK(path.size() == 8);
}

TEST_CASE("route: hashing is deterministic and uses every uplink", "[fabric][ecmp]") {
  const Fabric f = preset_fabric("tiny-3tier");
  std::vector<Hop> a, b;
  std::set<uint32_t> first_up;
  for (uint64_t flow = 0; flow < 200; ++flow) {
    f.route(0, 40, flow, 7, EcmpPolicy::Hash, a);
    f.route(0, 40, flow, 7, EcmpPolicy::Hash, b);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].link == b[i].link);
    first_up.insert(a[2].link);
  }
  CHECK(first_up.size() == static_cast<size_t>(f.shape().tor_up_ports));
}

TEST_CASE("names: every vertex and link name round-trips", "[fabric][names]") {
  for (const char* name : {"tiny-2tier", "tiny-3tier"}) {
    const Fabric f = preset_fabric(name);
    std::set<std::string> seen;
    for (uint32_t v = 0; v < f.vertices().size(); ++v) {
      const std::string n = f.vertex_name(v);
      CHECK(seen.insert(n).second);
      REQUIRE(f.find_vertex(n) == v);
    }
    for (uint32_t l = 0; l < f.links().size(); ++l) {
      const std::string n = f.link_name(l);
      CHECK(seen.insert(n).second);
      REQUIRE(f.find_link(n) == l);
    }
  }
  const Fabric f = preset_fabric("tiny-3tier");
  CHECK(f.find_server("server7") == 7);
  CHECK_FALSE(f.find_server("server8"));
  CHECK_FALSE(f.find_server("server07"));
  CHECK_FALSE(f.find_server("server-1"));
  CHECK(f.find_gpu("server2.gpu3") == 19);
  CHECK_FALSE(f.find_gpu("server2.gpu8"));
  CHECK_FALSE(f.find_gpu("server2.nic3"));
  CHECK(f.find_link("server0.nic0-tor0.r0") == f.find_link("server0.nic0-tor0.r0#0"));
  CHECK_FALSE(f.find_link("server0.nic0-tor0.r1"));
  CHECK(f.find_link("tor0.r0-agg0.pod0.r0#1"));
  CHECK_FALSE(f.find_link("tor0.r0-agg0.pod0.r0#2"));
  CHECK_FALSE(f.find_link("tor0.r0-agg0.pod1.r0")); // another block's pod
  CHECK_FALSE(f.find_link("garbage"));
  CHECK_FALSE(f.find_vertex("tor9.r0"));
  CHECK(f.link_name(*f.find_link("agg1.pod1.r0-spine3#1")) == "agg1.pod1.r0-spine3#1");
}

TEST_CASE("links_of_vertex: a switch's links, in id order", "[fabric]") {
  const Fabric f = preset_fabric("tiny-3tier");
  const auto tor = f.links_of_vertex(*f.find_vertex("tor1.r0"));
  // 2 servers × 4 NICs on rail 0 below, 4 aggregation uplinks above
  CHECK(tor.size() == 8 + 4);
  CHECK(std::is_sorted(tor.begin(), tor.end()));
  for (uint32_t l : tor)
    CHECK((f.links()[l].a == *f.find_vertex("tor1.r0") || f.links()[l].b == *f.find_vertex("tor1.r0")));
  CHECK(f.links_of_vertex(*f.find_vertex("spine0")).size() == 4 * 2); // 4 pods × 2 links
  CHECK(f.links_of_vertex(f.gpu_vertex(3)).size() == 2);              // NVLink + PCIe
  size_t total = 0;
  for (uint32_t v = 0; v < f.vertices().size(); ++v) total += f.links_of_vertex(v).size();
  CHECK(total == 2 * f.links().size());
}

TEST_CASE("path_latency_s: cables plus one switch latency per network switch", "[fabric]") {
  ClusterSpec spec = twinscale::config::load_cluster("tiny-3tier");
  spec.fabric.cable_latency_s = 10e-9;
  const Fabric f(spec);
  std::vector<Hop> path;
  f.route(0, 32, 5, 0, EcmpPolicy::Hash, path); // via spine: 5 switches, 4 cabled links
  CHECK(f.path_latency_s(0, path) == Approx(5 * 600e-9 + 6 * 10e-9));
  f.route(0, 1, 5, 0, EcmpPolicy::Hash, path); // inside a server
  CHECK(f.path_latency_s(0, path) == 0);
}

TEST_CASE("wiring: GPUs sharing NICs, several NICs per rail", "[fabric]") {
  ClusterSpec spec = twinscale::config::load_cluster("tiny-3tier");
  spec.server.nics = 4;            // GPU i → NIC i mod 4; NIC n → rail n mod 2
  spec.server.rails = 2;           // 2 NIC ports per server on each ToR
  spec.fabric.servers_per_tor = 4; // 8 NIC ports = 4 split 400G ports
  const Fabric f(spec);
  CHECK(f.shape().nics_per_server_per_tor == 2);
  CHECK(f.shape().tor_down_ports_used == 4);
  CHECK(f.shape().server_groups == 2);
  CHECK(f.nic_of_gpu(6) == 2);
  CHECK(f.rail_of_gpu(6) == 0);
  CHECK(f.tor_of_gpu(8 * 5 + 7) == 1 * 2 + 1);                              // server 5 = group 1, NIC 3 → rail 1
  CHECK(f.links_of_vertex(*f.find_vertex("server0.nic1")).size() == 2 + 1); // GPUs 1, 5 + ToR
  std::vector<Hop> path;
  for (int64_t s = 0; s < f.gpus(); s += 3)
    for (int64_t d = 0; d < f.gpus(); ++d) {
      f.route(s, d, 1, 2, EcmpPolicy::Hash, path);
      REQUIRE(walk(f, s, path) == f.gpu_vertex(d));
    }
}

TEST_CASE("spread: fractions cover exactly the links hashing can use, one flow per tier", "[fabric][ecmp]") {
  for (const char* name : {"tiny-2tier", "tiny-3tier"}) {
    const Fabric f = preset_fabric(name);
    std::vector<WeightedHop> fluid;
    std::vector<Hop> path;
    for (int64_t s : {0, 9, 17}) // rails 0/1, several groups
      for (int64_t d = 0; d < f.gpus(); d += 5) {
        f.spread(s, d, fluid);
        std::set<std::pair<uint32_t, bool>> spread_links, hashed_links;
        std::map<std::pair<int, bool>, double> per_kind; // (kind, up) → Σ fraction
        for (const auto& h : fluid) {
          spread_links.insert({h.link, h.up});
          per_kind[{static_cast<int>(f.links()[h.link].kind), h.up}] += h.fraction;
        }
        for (const auto& [k, total] : per_kind) CHECK(total == Approx(1.0));
        for (uint64_t flow = 0; flow < 400; ++flow) {
          f.route(s, d, flow, 3, EcmpPolicy::Hash, path);
          for (const Hop& h : path) hashed_links.insert({h.link, h.up});
        }
        INFO(name << " " << s << " → " << d);
        CHECK(hashed_links == spread_links);
      }
  }
}

TEST_CASE("route IdealSpread: one ToR's flows with equal ids share its uplinks evenly", "[fabric][ecmp]") {
  const Fabric f = preset_fabric("tiny-3tier"); // a ToR: 8 NIC ports below, 4 uplinks
  std::map<uint32_t, int> per_uplink;
  std::vector<Hop> path;
  for (int64_t g = 0; g < 16; ++g) {
    if (f.rail_of_gpu(g) != 0) continue; // the 8 GPUs behind tor0.r0
    f.route(g, 32 + g, 0, 0, EcmpPolicy::IdealSpread, path);
    REQUIRE(path.size() == 8);
    ++per_uplink[path[2].link];
  }
  CHECK(per_uplink.size() == 4);
  for (const auto& [link, n] : per_uplink) CHECK(n == 2);
}
