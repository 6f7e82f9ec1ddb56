// Issue #16 in the simulator: the expert-parallel all-to-alls and ZeRO-3's per-layer
// collectives run in both modes, the aggregated (symmetric) run agrees with the full one,
// routing imbalance costs time, ZeRO-3's prefetch hides gathers.
#include <catch2/catch.hpp>

#include "config/job_file.hpp"
#include "schedules/schedule.hpp"
#include "sim_test_util.hpp"
#include "topology/placement.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

struct Run {
  double iteration_s = 0;
  double compute_s = 0;
};

Run simulate_job(const schedules::JobSpec& job, SimMode mode, bool aggregate) {
  auto spec = tiny_cluster();
  spec.gpus = job.parallel.gpus();
  const topology::Fabric fabric(spec);
  const schedules::Schedule s = schedules::lower(job);
  const auto gpus = topology::place(fabric, {job.parallel.tp, job.parallel.dp, job.parallel.pp},
                                    topology::PlacementPolicy::Linear, 1);
  SimOptions o;
  o.mode = mode;
  o.aggregate = aggregate;
  const auto r = simulate(s, fabric, gpus, o);
  return {r.iteration_time_s, r.breakdown.compute_s};
}

} // namespace

TEST_CASE("tiny-moe and tiny-fsdp simulate in both modes; aggregated agrees with every rank executed", "[sim][moe]") {
  for (const char* preset : {"tiny-moe", "tiny-fsdp"}) {
    const auto job = config::load_job_preset(preset);
    for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
      const Run a = simulate_job(job, mode, true);
      const Run f = simulate_job(job, mode, false);
      INFO(preset << " mode " << to_string(mode) << " aggregated " << a.iteration_s << " full " << f.iteration_s);
      CHECK(a.iteration_s > 0);
      CHECK(a.iteration_s == Approx(f.iteration_s).epsilon(2e-3));
      CHECK(a.compute_s == Approx(f.compute_s).epsilon(2e-3));
    }
  }
}

TEST_CASE("ZeRO-3 costs more communication than ZeRO-1 and prefetching hides some of it", "[sim][moe]") {
  auto job = config::load_job_preset("tiny-fsdp");
  job.model.hidden = 2048;
  job.model.heads = 16;
  job.model.seq_len = 1024;
  job.model.ffn_hidden = 4 * 2048;
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    const double prefetched = simulate_job(job, mode, true).iteration_s;
    auto blocking = job;
    blocking.options.fsdp_prefetch = 0;
    auto zero1 = job;
    zero1.parallel.zero_stage = 1;
    const double b = simulate_job(blocking, mode, true).iteration_s;
    const double z1 = simulate_job(zero1, mode, true).iteration_s;
    INFO("mode " << to_string(mode) << " zero-3 prefetched " << prefetched << " blocking " << b << " zero-1 " << z1);
    CHECK(prefetched < b);
    CHECK(z1 < b);
  }
}

TEST_CASE("routing imbalance lengthens a MoE iteration; wider expert parallelism moves more bytes", "[sim][moe]") {
  auto job = config::load_job_preset("tiny-moe");
  // larger sizes so that the experts and the all-to-alls are not lost in launch latencies
  job.model.hidden = 2048;
  job.model.heads = 16;
  job.model.kv_heads = 4;
  job.model.seq_len = 1024;
  job.model.ffn_hidden = 4096;
  job.model.moe_ffn_hidden = 2048;
  job.model.routing = schedules::RoutingKind::Balanced;
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    const double balanced = simulate_job(job, mode, true).iteration_s;
    auto skewed = job;
    skewed.model.routing = schedules::RoutingKind::Dirichlet;
    skewed.model.routing_alpha = 0.2;
    const double imbalanced = simulate_job(skewed, mode, true).iteration_s;
    INFO("mode " << to_string(mode) << " balanced " << balanced << " imbalanced " << imbalanced);
    CHECK(imbalanced > balanced * 1.01);
  }
}
