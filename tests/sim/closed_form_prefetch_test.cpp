// Closed forms computed ahead on another thread (sim/detail/closed_form_prefetch.hpp):
// every one equals, bit for bit, what the executor computes when first asked for, and a
// symmetric analytic run gives every figure to the bit with and without them.
#include <catch2/catch.hpp>

#include <cstring>
#include <set>

#include "config/job_file.hpp"
#include "sim/detail/closed_form_prefetch.hpp"
#include "sim/detail/collective_task.hpp"
#include "sim/detail/executor.hpp"
#include "sim/detail/network_paths.hpp"
#include "sim/nccl_model.hpp"
#include "sim_test_util.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

/// Analytic options with the NCCL figures of tiny-2tier's GPUs, as simulate() resolves them.
SimOptions resolved_options() {
  SimOptions o;
  o.mode = SimMode::Analytic;
  o.nccl = resolve_nccl(o.nccl, tiny_cluster());
  o.helper_thread = HelperThread::Always; // whatever the machine's load
  return o;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

} // namespace

TEST_CASE("closed forms computed ahead equal those computed when asked for, bit for bit",
          "[sim][closed_form_prefetch]") {
  for (const char* preset : {"tiny-megascale", "tiny-interleaved", "tiny-cp", "tiny-moe-hier"}) {
    INFO(preset);
    const auto l = lower_tiny_preset(preset);
    const SimOptions o = resolved_options();
    const detail::NetworkPaths paths(*l.fabric, o.seed, o.ecmp, 0.8, 0.9, o.nccl.pxn);
    const auto ranks = detail::SimExecutor::symmetric_ranks(l.schedule.layout, {});
    detail::ClosedFormPrefetch prefetch(l.schedule, l.gpus, paths, o, ranks, /*images=*/true);
    prefetch.finish();
    // every distinct collective of the pipeline's programs, computed here on this thread
    const detail::NetworkPaths own(*l.fabric, o.seed, o.ecmp, 0.8, 0.9, o.nccl.pxn);
    const detail::CollectiveTasks tasks(own, o);
    const auto& L = l.schedule.layout;
    std::set<std::pair<uint64_t, uint64_t>> keys;
    size_t compared = 0;
    for (int64_t rank : ranks)
      for (const schedules::Op& op : l.schedule.program(rank).ops) {
        if (!op.is_collective()) continue;
        const auto members = L.group_members(op.group, rank);
        if (members.size() <= 1) continue;
        const auto key = detail::closed_form_key(op.kind, op.group, members.front(), op.bytes);
        uint64_t bits = 0;
        std::memcpy(&bits, &op.bytes, sizeof bits);
        if (!keys.insert({key.group, bits}).second) continue;
        const double expected =
            tasks.closed_form_s(op.kind, op.bytes, detail::image_gpu_groups(L, l.gpus, op.group, members, true));
        const auto got = prefetch.take(key);
        REQUIRE(got.has_value());
        CHECK(same_bits(*got, expected));
        ++compared;
      }
    CHECK(compared == prefetch.computed());
    CHECK(compared >= 4);
  }
}

TEST_CASE("a closed form taken before the helper reaches it is left to the caller", "[sim][closed_form_prefetch]") {
  const auto l = lower_tiny_preset("tiny-megascale");
  const SimOptions o = resolved_options();
  const detail::NetworkPaths paths(*l.fabric, o.seed, o.ecmp, 0.8, 0.9, o.nccl.pxn);
  // an empty rank list: nothing to compute, every key is the caller's
  detail::ClosedFormPrefetch idle(l.schedule, l.gpus, paths, o, {}, true);
  idle.finish();
  CHECK(idle.computed() == 0);
  CHECK_FALSE(idle.take(detail::closed_form_key(schedules::OpKind::AllReduce, schedules::GroupKind::Dp, 0, 1e6)));
  // destroyed while it works: stops after the closed form under way and joins
  for (int i = 0; i < 20; ++i) {
    detail::ClosedFormPrefetch p(l.schedule, l.gpus, paths, o,
                                 detail::SimExecutor::symmetric_ranks(l.schedule.layout, {}), true);
  }
}

TEST_CASE("a symmetric analytic run gives every figure to the bit with and without closed forms ahead",
          "[sim][closed_form_prefetch]") {
  for (const char* preset : {"tiny-megascale", "tiny-interleaved", "tiny-cp", "tiny-moe-hier", "tiny-zb"}) {
    INFO(preset);
    const auto l = lower_tiny_preset(preset);
    SimOptions o;
    o.mode = SimMode::Analytic;
    const auto with = simulate(l.schedule, *l.fabric, l.gpus, o);
    o.prefetch_closed_forms = false;
    const auto without = simulate(l.schedule, *l.fabric, l.gpus, o);
    CHECK(same_bits(with.iteration_time_s, without.iteration_time_s));
    CHECK(same_bits(with.mfu, without.mfu));
    CHECK(std::memcmp(&with.breakdown, &without.breakdown, sizeof with.breakdown) == 0);
    REQUIRE(with.per_rank_breakdown.size() == without.per_rank_breakdown.size());
    for (size_t r = 0; r < with.per_rank_breakdown.size(); ++r)
      CHECK(std::memcmp(&with.per_rank_breakdown[r], &without.per_rank_breakdown[r], sizeof(Breakdown)) == 0);
  }
}
