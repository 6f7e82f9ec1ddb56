// Rail-only fabrics (Wang et al., "How to Build Low-cost Networks for Large
// Language Models"): every rail is its own Clos, no switch connects two rails, and
// traffic between servers on different rails crosses NVLink to the GPU of the
// destination's rail first.
#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>

#include "config/cluster_file.hpp"
#include "tests/cli_runner.hpp"
#include "tests/topology/helpers.hpp"
#include "topology/analysis.hpp"

using namespace twinscale::topology;
using twinscale::topology::test::preset_fabric;
using twinscale::topology::test::walk;

namespace {
Fabric rail_only(const std::string& preset, int64_t gpus = 0) {
  ClusterSpec spec = twinscale::config::load_cluster(preset);
  spec.fabric.rail_only = true;
  if (gpus > 0) spec.gpus = gpus;
  return Fabric(spec);
}

/// The rail of a network vertex (NIC, ToR, aggregation or spine), from the links it has.
int64_t rail_of_vertex(const Fabric& f, uint32_t v) {
  const Vertex& x = f.vertices()[v];
  const ClosShape& s = f.shape();
  switch (x.kind) {
  case VertexKind::Nic: return (x.index % s.nics_per_server) % s.rails;
  case VertexKind::Tor: return x.index % s.rails;
  case VertexKind::Aggregation: return (x.index / s.aggs_per_pod) % s.rails;
  case VertexKind::Spine:
    return s.tiers == 2 ? x.index / s.spines_per_plane : x.index / s.spines_per_plane / s.aggs_per_pod;
  default: return -1;
  }
}
} // namespace

TEST_CASE("rail-only: one spine plane per rail, and no switch link joins two rails", "[fabric][rail_only]") {
  for (const char* preset : {"tiny-2tier", "tiny-3tier"}) {
    INFO(preset);
    const Fabric clos = preset_fabric(preset);
    const Fabric f = rail_only(preset);
    const ClosShape& s = f.shape();
    CHECK(s.rail_only);
    CHECK(s.spine_planes == clos.shape().spine_planes * s.rails);
    int64_t switch_links = 0;
    for (const Link& l : f.links()) {
      const int64_t ra = rail_of_vertex(f, l.a), rb = rail_of_vertex(f, l.b);
      if (ra < 0 || rb < 0) continue;
      ++switch_links;
      CHECK(ra == rb);
    }
    CHECK(switch_links > 0);
    // the rails' planes below the spines are wired as in the Clos
    const FabricAnalysis a = analyze(f), ac = analyze(clos);
    REQUIRE(a.rails_summary.size() == ac.rails_summary.size());
    for (size_t i = 0; i < a.rails_summary.size(); ++i)
      CHECK(a.rails_summary[i].plane_components == ac.rails_summary[i].plane_components);
    bool other_rail = false;
    for (const auto& d : a.distances) other_rail |= d.between == "other rail (NVLink first)" && d.exists;
    CHECK(other_rail);
  }
}

TEST_CASE("rail-only routes: cross-rail traffic takes NVLink to the destination's rail first", "[fabric][rail_only]") {
  for (const char* preset : {"tiny-2tier", "tiny-3tier"}) {
    INFO(preset);
    const Fabric f = rail_only(preset);
    std::vector<Hop> path;
    std::vector<WeightedHop> spread;
    int cross = 0;
    for (int64_t src = 0; src < f.gpus(); src += 3)
      for (int64_t dst = 0; dst < f.gpus(); dst += 5) {
        if (src == dst) continue;
        f.route(src, dst, 7, 1, EcmpPolicy::Hash, path);
        INFO("src " << src << " dst " << dst);
        REQUIRE(walk(f, src, path) == f.gpu_vertex(dst));
        const bool apart = f.server_of_gpu(src) != f.server_of_gpu(dst);
        const int64_t relay = f.rail_relay(src, dst);
        if (apart && f.rail_of_gpu(src) != f.rail_of_gpu(dst)) {
          ++cross;
          CHECK(relay != src);
          CHECK(f.server_of_gpu(relay) == f.server_of_gpu(src));
          CHECK(f.rail_of_gpu(relay) == f.rail_of_gpu(dst));
          REQUIRE(path.size() >= 2);
          CHECK(f.links()[path[0].link].kind == LinkKind::NvLink);
          CHECK(f.links()[path[1].link].kind == LinkKind::NvLink);
          CHECK(walk(f, src, {path[0], path[1]}) == f.gpu_vertex(relay));
        } else {
          CHECK(relay == src);
        }
        // every network switch on the path is on the destination's rail
        uint32_t at = f.gpu_vertex(src);
        for (const Hop& h : path) {
          const Link& l = f.links()[h.link];
          at = h.up ? l.b : l.a;
          const int64_t r = rail_of_vertex(f, at);
          if (r >= 0) CHECK(r == f.rail_of_gpu(dst));
        }
        // the fluid spread crosses the same links the first hops do, and reaches dst's NIC
        f.spread(src, dst, spread);
        REQUIRE(!spread.empty());
        CHECK(spread.front().link == path.front().link);
        CHECK(spread.back().link == path.back().link);
      }
    CHECK(cross > 0);
  }
}

TEST_CASE("h100-rail-only: 16,384 GPUs in two tiers, the Clos preset needs three", "[fabric][rail_only]") {
  const Fabric r = preset_fabric("h100-rail-only", 16384);
  CHECK(r.shape().tiers == 2);
  CHECK(r.shape().rail_only);
  CHECK(r.shape().spine_planes == 8);
  const Fabric c = preset_fabric("h100-400g", 16384);
  CHECK(c.shape().tiers == 3);
  // fewer switches: no aggregation tier
  CHECK(r.shape().tors + r.shape().aggs + r.shape().spines < c.shape().tors + c.shape().aggs + c.shape().spines);
  // a 2-tier Clos (rails joined) of the same switches cannot hold it
  ClusterSpec joined = twinscale::config::load_cluster("h100-rail-only");
  joined.gpus = 16384;
  joined.fabric.rail_only = false;
  CHECK_THROWS_WITH(Fabric(joined), Catch::Contains("fabric.tiers = 3"));
}

TEST_CASE("rail-only: topology show says so, a job simulates on it in both modes", "[fabric][rail_only][cli]") {
  using twinscale::test::Capture;
  using twinscale::test::run_cli;
  const auto show = run_cli("topology show --preset h100-rail-only", Capture::StdoutOnly);
  REQUIRE(show.rc == 0);
  CHECK(show.out.find("rail-only: no switch connects rails") != std::string::npos);
  CHECK(show.out.find("other rail (NVLink first)") != std::string::npos);
  // tiny-moe on 4 servers: its expert all-to-alls and DP rings cross servers and rails
  for (const char* mode : {"analytic", "flow"}) {
    INFO(mode);
    const auto r =
        run_cli(std::string("simulate --preset tiny-moe --gpus 32 --cluster h100-rail-only --mode ") + mode + " --json",
                Capture::StdoutOnly);
    REQUIRE(r.rc == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j.at("cluster") == "h100-rail-only");
    CHECK(j.at("iteration_time_s").get<double>() > 0);
  }
}
