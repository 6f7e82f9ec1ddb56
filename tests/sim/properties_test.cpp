// Properties of whole simulated iterations on lowered jobs: overlap never hurts on an
// idle fabric, oversubscription never helps, same inputs give identical outputs.
#include <catch2/catch.hpp>

#include "config/job_file.hpp"
#include "schedules/schedule.hpp"
#include "schedules/validate.hpp"
#include "sim_test_util.hpp"
#include "topology/placement.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

Lowered lower_job(const schedules::JobSpec& job, topology::ClusterSpec spec) {
  spec.gpus = job.parallel.gpus();
  return lower_on(job, spec);
}

/// tiny-megascale scaled up so that communication is not negligible.
schedules::JobSpec medium_job() {
  auto job = config::load_job_preset("tiny-megascale");
  job.model.hidden = 4096;
  job.model.heads = 32;
  job.model.seq_len = 2048;
  job.model.window = 512;
  job.model.vocab = 32000;
  job.options.iterations = 1;
  return job;
}

double run(const Lowered& l, SimMode mode) {
  SimOptions o;
  o.mode = mode;
  // Chunking a tiny model's GEMMs (M6) really costs whole waves of SMs (wave
  // quantisation, tested in device_model_test); the properties here concern scheduling.
  o.device.wave_quantisation = false;
  return simulate(l.schedule, *l.fabric, l.gpus, o).iteration_time_s;
}

} // namespace

TEST_CASE("turning an overlap option on never lengthens an iteration on an idle fabric", "[sim][properties]") {
  const auto spec = tiny_cluster();
  int compared = 0;
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    for (int which = 0; which < 3; ++which) {
      auto off = medium_job();
      (which == 0 ? off.options.overlap.dp : which == 1 ? off.options.overlap.pp : off.options.overlap.tp) = false;
      auto on = off;
      (which == 0 ? on.options.overlap.dp : which == 1 ? on.options.overlap.pp : on.options.overlap.tp) = true;
      const auto l_off = lower_job(off, spec), l_on = lower_job(on, spec);
      // Both schedules must be valid: one the validator rejects is a lowering defect, and
      // the comparison below would not be made.
      const auto bad_off = schedules::validate(l_off.schedule), bad_on = schedules::validate(l_on.schedule);
      INFO("option " << which << ": " << (bad_off.empty() ? "" : schedules::describe(bad_off.front())) << " "
                     << (bad_on.empty() ? "" : schedules::describe(bad_on.front())));
      REQUIRE(bad_off.empty());
      REQUIRE(bad_on.empty());
      ++compared;
      const double t_off = run(l_off, mode);
      const double t_on = run(l_on, mode);
      INFO("mode " << to_string(mode) << " option "
                   << (which == 0   ? "dp"
                       : which == 1 ? "pp"
                                    : "tp")
                   << " off " << t_off << " on " << t_on);
      CHECK(t_on <= t_off * (1 + 1e-9));
    }
  }
  CHECK(compared == 6); // 2 modes × 3 overlap options, none left out
}

TEST_CASE("a 2:1 oversubscribed fabric is never faster than 1:1", "[sim][properties]") {
  auto job = medium_job();
  job.parallel.tp = 2;
  job.parallel.pp = 1;
  job.parallel.vpp = 1;
  job.parallel.dp = 8;
  job.parallel.global_batch = 16;
  job.options.pipeline = schedules::PipelineKind::OneFOneB;
  // radix 12 so that a ToR splits 2:1 into whole ports (8 down + 4 up; 1:1 is 6 + 6)
  auto one = config::load_cluster("tiny-3tier");
  one.switch_spec.radix = 12;
  auto two = one;
  two.fabric.oversubscription = {2.0, 1.0};
  const auto l1 = lower_job(job, one), l2 = lower_job(job, two);
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    for (uint64_t seed : {1, 2, 3}) {
      SimOptions o;
      o.mode = mode;
      o.seed = seed;
      const double t1 = simulate(l1.schedule, *l1.fabric, l1.gpus, o).iteration_time_s;
      const double t2 = simulate(l2.schedule, *l2.fabric, l2.gpus, o).iteration_time_s;
      INFO("mode " << to_string(mode) << " seed " << seed << " 1:1 " << t1 << " 2:1 " << t2);
      CHECK(t2 >= t1 * (1 - 1e-9));
    }
  }
}

TEST_CASE("same inputs and seed give identical reports and traces", "[sim][properties]") {
  const auto l = lower_job(config::load_job_preset("tiny-megascale"), tiny_cluster());
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    SimOptions o;
    o.mode = mode;
    o.record_trace = true;
    o.seed = 7;
    const auto a = simulate(l.schedule, *l.fabric, l.gpus, o);
    const auto b = simulate(l.schedule, *l.fabric, l.gpus, o);
    CHECK(a.completed);
    CHECK(a.iteration_time_s > 0);
    CHECK(a.iteration_time_s == b.iteration_time_s);
    CHECK(a.mfu == b.mfu);
    REQUIRE(a.trace.events.size() == b.trace.events.size());
    CHECK(!a.trace.events.empty());
    bool same = true;
    for (size_t i = 0; i < a.trace.events.size(); ++i) {
      const auto &x = a.trace.events[i], &y = b.trace.events[i];
      same = same && x.rank == y.rank && x.op_index == y.op_index && x.start_s == y.start_s && x.end_s == y.end_s;
    }
    CHECK(same);
    REQUIRE(a.per_rank.size() == b.per_rank.size());
    for (size_t i = 0; i < a.per_rank.size(); ++i) CHECK(a.per_rank[i].comm_wait_s == b.per_rank[i].comm_wait_s);
  }
}

TEST_CASE("lowered tiny jobs: aggregated run agrees with the unaggregated one", "[sim][aggregation]") {
  for (const char* preset : {"tiny-1f1b", "tiny-interleaved", "tiny-megascale"}) {
    const auto l = lower_job(config::load_job_preset(preset), tiny_cluster());
    for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
      SimOptions agg, full;
      agg.mode = full.mode = mode;
      full.aggregate = false;
      const auto a = simulate(l.schedule, *l.fabric, l.gpus, agg);
      const auto f = simulate(l.schedule, *l.fabric, l.gpus, full);
      INFO(preset << " mode " << to_string(mode) << " aggregated " << a.iteration_time_s << " full "
                  << f.iteration_time_s << " executed " << a.executed_ranks);
      CHECK(a.iteration_time_s == Approx(f.iteration_time_s).epsilon(2e-3));
      CHECK(a.breakdown.compute_s == Approx(f.breakdown.compute_s).epsilon(2e-3));
      CHECK(a.mfu > 0);
      CHECK(a.mfu < 1);
    }
  }
}

TEST_CASE("breakdown adds up to the makespan for every stage", "[sim][properties]") {
  const auto l = lower_job(config::load_job_preset("tiny-megascale"), tiny_cluster());
  SimOptions o;
  o.mode = SimMode::Flow;
  const auto r = simulate(l.schedule, *l.fabric, l.gpus, o);
  for (const auto& b : r.per_stage) {
    const double sum =
        b.compute_s + b.exposed_tp_s + b.exposed_ep_s + b.exposed_pp_s + b.exposed_dp_s + b.bubble_s + b.idle_s;
    CHECK(sum == Approx(r.makespan_s).epsilon(1e-9));
    CHECK(b.compute_s > 0);
  }
  CHECK(r.per_rank.size() == static_cast<size_t>(l.schedule.world()));
  for (const auto& t : r.per_rank) CHECK(t.forward_s > 0);
}

TEST_CASE("ZeRO-1's parameter gathers at the start of the iteration hide behind the forward, bucket by bucket",
          "[sim][properties]") {
  // Megatron-Core's overlap_param_gather: with per-layer buckets a layer waits only for
  // its own gather; with one bucket per chunk the whole gather is exposed at the start,
  // as it is (after the step) without DP overlap.
  const auto spec = tiny_cluster();
  auto job = medium_job();
  job.parallel.zero_stage = 1;
  job.options.overlap.dp = false;
  job.options.dp_bucket_params = 1;
  auto bucketed = job;
  bucketed.options.overlap.dp = true;
  auto whole = bucketed;
  whole.options.dp_bucket_params = 0;
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    const double t_exposed = run(lower_job(job, spec), mode);
    const double t_whole = run(lower_job(whole, spec), mode);
    const double t_bucketed = run(lower_job(bucketed, spec), mode);
    INFO("mode " << to_string(mode) << ": exposed " << t_exposed << " whole " << t_whole << " bucketed " << t_bucketed);
    CHECK(t_bucketed < t_whole);
    CHECK(t_whole <= t_exposed * (1 + 1e-9));
  }
}
