// Several jobs on one fabric (topology/multi_placement.hpp): disjoint whole servers,
// linear packing, tor-aware groups that no other job shares, seeded random placement,
// errors that name the job.
#include <catch2/catch.hpp>

#include <set>

#include "tests/topology/helpers.hpp"
#include "topology/multi_placement.hpp"

using namespace twinscale::topology;
using twinscale::topology::test::preset_fabric;

namespace {

std::set<int64_t> servers_of(const Fabric& f, const std::vector<int64_t>& gpus) {
  std::set<int64_t> s;
  for (int64_t g : gpus) s.insert(f.server_of_gpu(g));
  return s;
}

std::set<int64_t> groups_of(const Fabric& f, const std::vector<int64_t>& gpus) {
  std::set<int64_t> s;
  for (int64_t g : gpus) s.insert(f.group_of_server(f.server_of_gpu(g)));
  return s;
}

} // namespace

TEST_CASE("place_jobs: linear packs jobs in server order, sharing a ToR group at the seam", "[placement]") {
  const Fabric f = preset_fabric("tiny-3tier"); // 8 servers, 2 per ToR group
  const auto p = place_jobs(f, {{24, PlacementPolicy::Linear, 1}, {32, PlacementPolicy::Linear, 1}});
  REQUIRE(p.size() == 2);
  CHECK(servers_of(f, p[0]) == std::set<int64_t>{0, 1, 2});
  CHECK(servers_of(f, p[1]) == std::set<int64_t>{3, 4, 5, 6});
  CHECK(p[0][0] == 0);
  CHECK(p[1][0] == 24); // rank 0 of job 1 on the first GPU of server 3
  CHECK(groups_of(f, p[0]).count(1) == 1);
  CHECK(groups_of(f, p[1]).count(1) == 1); // both under ToR group 1
}

TEST_CASE("place_jobs: tor-aware gives each job ToR groups of its own", "[placement]") {
  const Fabric f = preset_fabric("tiny-3tier");
  const auto p = place_jobs(f, {{24, PlacementPolicy::TorAware, 1}, {32, PlacementPolicy::TorAware, 1}});
  CHECK(servers_of(f, p[0]) == std::set<int64_t>{0, 1, 2});
  CHECK(servers_of(f, p[1]) == std::set<int64_t>{4, 5, 6, 7});
  for (int64_t g : groups_of(f, p[0])) CHECK(groups_of(f, p[1]).count(g) == 0);
  // A third tor-aware job finds no free group; a linear one takes the leftover server.
  CHECK_THROWS_WITH(place_jobs(f, {{24, PlacementPolicy::TorAware, 1},
                                   {32, PlacementPolicy::TorAware, 1},
                                   {8, PlacementPolicy::TorAware, 1}}),
                    Catch::Contains("job 2") && Catch::Contains("ToR groups no other job uses"));
  const auto q = place_jobs(
      f, {{24, PlacementPolicy::TorAware, 1}, {32, PlacementPolicy::TorAware, 1}, {8, PlacementPolicy::Linear, 1}});
  CHECK(servers_of(f, q[2]) == std::set<int64_t>{3});
}

TEST_CASE("place_jobs: random is seeded, disjoint and deterministic", "[placement]") {
  const Fabric f = preset_fabric("tiny-3tier");
  const std::vector<JobRequest> r = {{32, PlacementPolicy::Random, 7}, {32, PlacementPolicy::Random, 8}};
  const auto a = place_jobs(f, r);
  CHECK(a == place_jobs(f, r));
  std::set<int64_t> all(a[0].begin(), a[0].end());
  all.insert(a[1].begin(), a[1].end());
  CHECK(all.size() == 64);
  CHECK(a != place_jobs(f, {{32, PlacementPolicy::Random, 9}, {32, PlacementPolicy::Random, 8}}));
}

TEST_CASE("place_jobs: errors name the job and what would fit", "[placement]") {
  const Fabric f = preset_fabric("tiny-3tier");
  CHECK_THROWS_WITH(place_jobs(f, {{12, PlacementPolicy::Linear, 1}}),
                    Catch::Contains("job 0 (12 GPUs)") && Catch::Contains("multiple of 8"));
  CHECK_THROWS_WITH(place_jobs(f, {{32, PlacementPolicy::Linear, 1}, {40, PlacementPolicy::Linear, 1}}),
                    Catch::Contains("job 1") && Catch::Contains("needs 5 servers, 4 are free"));
}
