#include <catch2/catch.hpp>

#include <set>

#include "tests/topology/helpers.hpp"
#include "topology/placement.hpp"

using namespace twinscale::topology;
using twinscale::topology::test::preset_fabric;

namespace {

int64_t rank_of(const JobShape& s, int64_t tp, int64_t dp, int64_t pp) { return tp + s.tp * (dp + s.dp * pp); }

/// Σ over DP groups of the ToR groups (server groups) each spans.
int64_t dp_tor_groups(const Fabric& f, const JobShape& s, const std::vector<int64_t>& g) {
  int64_t total = 0;
  for (int64_t pp = 0; pp < s.pp; ++pp)
    for (int64_t tp = 0; tp < s.tp; ++tp) {
      std::set<int64_t> groups;
      for (int64_t dp = 0; dp < s.dp; ++dp)
        groups.insert(f.group_of_server(f.server_of_gpu(g[static_cast<size_t>(rank_of(s, tp, dp, pp))])));
      total += static_cast<int64_t>(groups.size());
    }
  return total;
}

/// PP neighbour pairs whose GPUs sit under different ToR groups.
int64_t pp_pairs_across_tors(const Fabric& f, const JobShape& s, const std::vector<int64_t>& g) {
  int64_t n = 0;
  for (int64_t pp = 0; pp + 1 < s.pp; ++pp)
    for (int64_t dp = 0; dp < s.dp; ++dp)
      for (int64_t tp = 0; tp < s.tp; ++tp) {
        const auto a = g[static_cast<size_t>(rank_of(s, tp, dp, pp))];
        const auto b = g[static_cast<size_t>(rank_of(s, tp, dp, pp + 1))];
        n += f.group_of_server(f.server_of_gpu(a)) != f.group_of_server(f.server_of_gpu(b));
      }
  return n;
}

void check_valid(const Fabric& f, const JobShape& s, const std::vector<int64_t>& g) {
  REQUIRE(static_cast<int64_t>(g.size()) == s.tp * s.dp * s.pp);
  std::set<int64_t> used(g.begin(), g.end());
  CHECK(used.size() == g.size()); // injective: one rank per GPU
  CHECK(*used.begin() >= 0);
  CHECK(*used.rbegin() < f.gpus());
  for (int64_t r = 0; r < static_cast<int64_t>(g.size()); r += s.tp)
    for (int64_t t = 1; t < s.tp; ++t)
      CHECK(f.server_of_gpu(g[static_cast<size_t>(r + t)]) == f.server_of_gpu(g[static_cast<size_t>(r)]));
}

} // namespace

TEST_CASE("placement: TP stays in a server, ranks map one-to-one, for every policy", "[placement]") {
  const Fabric f = preset_fabric("tiny-3tier");
  for (JobShape s : {JobShape{8, 4, 2}, JobShape{4, 4, 4}, JobShape{2, 8, 2}, JobShape{1, 3, 5}})
    for (PlacementPolicy p : {PlacementPolicy::Linear, PlacementPolicy::TorAware, PlacementPolicy::Random})
      check_valid(f, s, place(f, s, p, 11));
  // the whole cluster: a bijection
  const auto g = place(f, JobShape{8, 4, 2}, PlacementPolicy::Random, 3);
  CHECK(std::set<int64_t>(g.begin(), g.end()).size() == 64);
}

TEST_CASE("placement: Linear puts rank r on GPU r", "[placement]") {
  const Fabric f = preset_fabric("tiny-2tier");
  const auto g = place(f, JobShape{4, 2, 2}, PlacementPolicy::Linear, 0);
  for (size_t r = 0; r < g.size(); ++r) CHECK(g[r] == static_cast<int64_t>(r));
}

TEST_CASE("placement: Random is deterministic per seed and differs across seeds", "[placement]") {
  const Fabric f = preset_fabric("megascale-ampere", 2048);
  const JobShape s{8, 16, 8};
  const auto a = place(f, s, PlacementPolicy::Random, 1);
  CHECK(a == place(f, s, PlacementPolicy::Random, 1));
  CHECK(a != place(f, s, PlacementPolicy::Random, 2));
  CHECK(place(f, s, PlacementPolicy::TorAware, 1) == place(f, s, PlacementPolicy::TorAware, 9));
}

TEST_CASE("placement: TorAware keeps DP rings and PP neighbours under fewer ToRs than Random (M10)", "[placement]") {
  const Fabric f = preset_fabric("megascale-ampere", 12288);
  const JobShape s{8, 32, 16}; // 4,096 GPUs: a stage's DP ring spans 32 servers
  const auto aware = place(f, s, PlacementPolicy::TorAware, 0);
  const auto random = place(f, s, PlacementPolicy::Random, 0);
  const int64_t aware_dp = dp_tor_groups(f, s, aware), random_dp = dp_tor_groups(f, s, random);
  INFO("DP ToR groups: aware " << aware_dp << ", random " << random_dp);
  CHECK(aware_dp == s.pp * s.tp); // each DP ring under one ToR per rail
  CHECK(random_dp > 4 * aware_dp);
  const int64_t aware_pp = pp_pairs_across_tors(f, s, aware), random_pp = pp_pairs_across_tors(f, s, random);
  INFO("PP pairs across ToRs: aware " << aware_pp << ", random " << random_pp);
  CHECK(aware_pp < random_pp);
}

TEST_CASE("placement: TorAware does not let a stage straddle two ToR groups when it fits one", "[placement]") {
  const Fabric f = preset_fabric("megascale-ampere", 12288);
  const JobShape s{8, 48, 4}; // 48 servers per stage, 64 per ToR group
  const auto linear = place(f, s, PlacementPolicy::Linear, 0);
  const auto aware = place(f, s, PlacementPolicy::TorAware, 0);
  check_valid(f, s, aware);
  CHECK(dp_tor_groups(f, s, aware) == s.pp * s.tp);
  CHECK(dp_tor_groups(f, s, linear) > s.pp * s.tp); // stage 1 spans servers 48..95
  // A cluster too small for the alignment falls back to linear packing.
  const Fabric small = preset_fabric("megascale-ampere", 48 * 8 * 4);
  CHECK(place(small, s, PlacementPolicy::TorAware, 0) == place(small, s, PlacementPolicy::Linear, 0));
}

TEST_CASE("placement: impossible shapes throw TopologyError naming the shape", "[placement][errors]") {
  const Fabric f = preset_fabric("tiny-2tier"); // 32 GPUs, 8 per server
  CHECK_THROWS_WITH(place(f, JobShape{3, 2, 1}, PlacementPolicy::Linear, 0), Catch::Contains("TP 3 must divide"));
  CHECK_THROWS_WITH(place(f, JobShape{16, 1, 1}, PlacementPolicy::Linear, 0), Catch::Contains("TP 16"));
  CHECK_THROWS_WITH(place(f, JobShape{8, 4, 2}, PlacementPolicy::Random, 0), Catch::Contains("needs 64 GPUs"));
  CHECK_THROWS_AS(place(f, JobShape{0, 1, 1}, PlacementPolicy::Linear, 0), TopologyError);
}
