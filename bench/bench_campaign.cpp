// bench_campaign: wall time and peak RSS of the campaign engine at MegaScale's scale —
// 28 days of GPT-175B on 12,288 GPUs under the llama3-405b fault model and the megascale
// recovery preset (target: ≤ 1 s for one seed), then 100 seeds, then a 15-point
// checkpoint-interval sweep of 10 seeds each.
#include <cstdio>

#include "bench/measure.hpp"
#include "config/fault_file.hpp"
#include "config/job_file.hpp"
#include "config/recovery_file.hpp"
#include "faults/campaign.hpp"
#include "faults/checkpoint_tuner.hpp"

using namespace twinscale;

int main() {
  const auto job = config::load_job_preset("gpt-175b-megascale");
  const auto recovery = config::load_recovery_preset("megascale");
  const auto state = faults::checkpoint_state(job, 8);
  faults::Campaign c;
  c.model = config::load_fault_model_preset("llama3-405b");
  c.recovery = recovery.policy;
  c.checkpoint_interval_s = recovery.checkpoint.interval_s;
  c.checkpoint = faults::checkpoint_times(recovery.checkpoint, state, recovery.policy.load_method);
  c.shape = state.shape;
  c.spec.duration_s = 28 * 86400.0;
  c.spec.iteration_time_s = 10.0;
  c.spec.seeds = 1;
  std::printf("# %lld GPUs, 28 days, llama3-405b + megascale, iteration 10 s\n", static_cast<long long>(state.gpus()));

  bench::Stopwatch one;
  const auto s1 = faults::run_campaign(c);
  bench::report("campaign_28d_12288gpu_1seed_wall", one.seconds(), "s");
  bench::report("campaign_28d_12288gpu_1seed_interruptions", s1.interruptions.mean, "count");
  bench::report("campaign_28d_12288gpu_1seed_ettr", s1.ettr.mean, "ratio");

  c.spec.seeds = 100;
  bench::Stopwatch hundred;
  const auto s100 = faults::run_campaign(c);
  bench::report("campaign_28d_12288gpu_100seeds_wall", hundred.seconds(), "s");
  bench::report("campaign_28d_12288gpu_100seeds_ettr", s100.ettr.mean, "ratio");
  bench::report("campaign_28d_12288gpu_100seeds_ettr_ci95", s100.ettr.half_width, "ratio");

  c.spec.seeds = 10;
  bench::Stopwatch sweep;
  const auto t = faults::tune_checkpoint(c, faults::geometric_intervals(20, 3600, 15));
  bench::report("tune_15x10seeds_wall", sweep.seconds(), "s");
  bench::report("tune_best_interval", t.points[t.best].interval_s, "s");
  bench::report("peak_rss", bench::peak_rss_mib(), "MiB");
  return 0;
}
