// Closed forms of image groups keep only the flows no other dominates (phase_flows: per
// latency the lowest rate, kept while below every rate of a longer latency). The time is
// a max over flows, so that front gives the same seconds as every flow, checked here
// against the uncached path (a link "degraded" by a factor of 1 turns the front off and
// changes no bandwidth).
#include <catch2/catch.hpp>

#include <tuple>

#include "sim/detail/network_paths.hpp"
#include "sim_test_util.hpp"

using namespace twinscale;
using namespace twinscale::sim;

TEST_CASE("network paths: a closed form over image groups equals the max over every flow, bit for bit",
          "[sim][collectives]") {
  const topology::ClusterSpec spec = test::tiny_cluster(); // 4 servers × 8 GPUs, 2 rails
  const topology::Fabric fabric(spec);
  // a ring of 4 members per group, one member per server, 8 images (every local index),
  // on 2 channels; and the same ring with its members two per server (NVLink and fabric hops)
  std::vector<std::vector<int64_t>> across, mixed;
  for (int64_t i = 0; i < 8; ++i) across.push_back({i, 8 + i, 16 + i, 24 + i});
  for (int64_t i = 0; i < 4; ++i) mixed.push_back({i, i + 4, 16 + i, 20 + i});
  for (const auto* groups : {&across, &mixed}) {
    CollectivePlan plan;
    for (const auto& [steps, bytes, nccl_latency] : {std::tuple{3, 1e6, 0.0}, std::tuple{1, 0.0, 5e-6}}) {
      CollectivePhase phase;
      for (uint32_t c = 0; c < 2; ++c)
        for (int32_t m = 0; m < 4; ++m) phase.transfers.push_back({m, (m + 1) % 4, c});
      phase.steps = steps;
      phase.latency_steps = steps + 1;
      phase.bytes_per_step = bytes;
      phase.nccl_latency_s = nccl_latency;
      plan.phases.push_back(phase);
    }
    const detail::NetworkPaths front(fabric, 7, topology::EcmpPolicy::Hash, 0.9, 0.8);
    detail::NetworkPaths every_flow(fabric, 7, topology::EcmpPolicy::Hash, 0.9, 0.8);
    every_flow.degrade_link(0, 1.0); // no front from here on; no bandwidth changed
    const double seconds = front.closed_form_s(plan, *groups);
    CHECK(seconds > 0);
    CHECK(seconds == every_flow.closed_form_s(plan, *groups));
    CHECK(front.closed_form_s(plan, *groups, false) == every_flow.closed_form_s(plan, *groups, false));
    CHECK(front.closed_form_s(plan, *groups) == seconds); // from the cache now
  }
}
