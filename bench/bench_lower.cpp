// This benchmark lowers gpt-175b-megascale at 12,288 GPUs (global batch 6,144) and
// validates it (one representative per stage by tp×dp symmetry), printing wall time and
// peak RSS of each step; then the per-rank fallback of the validator at 1/8 scale.
// Usage: bench_lower [preset] [gpus] [global_batch]
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "bench/measure.hpp"
#include "config/job_file.hpp"
#include "schedules/schedule.hpp"
#include "schedules/validate.hpp"

namespace {
int run(int argc, char** argv) {
  using namespace twinscale;
  const std::string preset = argc > 1 ? argv[1] : "gpt-175b-megascale";
  const int64_t gpus = argc > 2 ? std::atoll(argv[2]) : 12288;
  const int64_t batch = argc > 3 ? std::atoll(argv[3]) : 6144;
  if (gpus <= 0 || batch <= 0) throw std::invalid_argument("GPUS and GLOBAL_BATCH: positive counts");
  auto job = config::load_job_preset(preset);
  config::apply_overrides(job, gpus, batch);

  bench::Stopwatch lower_clock;
  const schedules::Schedule s = schedules::lower(job);
  const double lower_s = lower_clock.seconds();
  size_t ops = 0;
  for (const auto& p : s.programs) ops += p.ops.size();
  bench::report("lower.wall", lower_s, "s");
  bench::report("lower.peak_rss", bench::peak_rss_mib(), "MiB");
  bench::report("lower.ranks", static_cast<double>(s.world()), "ranks");
  bench::report("lower.programs", static_cast<double>(s.programs.size()), "programs");
  bench::report("lower.ops_total_in_programs", static_cast<double>(ops), "ops");

  bench::Stopwatch validate_clock;
  const auto violations = schedules::validate(s);
  bench::report("validate.wall", validate_clock.seconds(), "s");
  bench::report("validate.peak_rss", bench::peak_rss_mib(), "MiB");
  bench::report("validate.violations", static_cast<double>(violations.size()), "");
  for (const auto& v : violations) std::fprintf(stderr, "%s\n", schedules::describe(v).c_str());

  // The fallback without the tp×dp symmetry executes every rank: measured on the same
  // programs (same micro-batches per pipeline) at 1/8 of the ranks, as it scales
  // linearly in ranks × ops (23 s measured at 12,288 ranks).
  auto small = job;
  config::apply_overrides(small, gpus / 8, batch / 8);
  const schedules::Schedule s_small = schedules::lower(small);
  schedules::ValidateOptions per_rank;
  per_rank.use_symmetry = false;
  bench::Stopwatch per_rank_clock;
  const auto per_rank_violations = schedules::validate(s_small, per_rank);
  bench::report("validate_per_rank.ranks", static_cast<double>(s_small.world()), "ranks");
  bench::report("validate_per_rank.wall", per_rank_clock.seconds(), "s");
  bench::report("validate_per_rank.peak_rss", bench::peak_rss_mib(), "MiB");
  bench::report("validate_per_rank.violations", static_cast<double>(per_rank_violations.size()), "");
  return violations.empty() && per_rank_violations.empty() ? 0 : 1;
}
} // namespace

int main(int argc, char** argv) {
  return twinscale::bench::guarded_main(argc, argv,
                                        "[PRESET] [GPUS] [GLOBAL_BATCH]   (default gpt-175b-megascale 12288 6144)",
                                        [&] { return run(argc, argv); });
}
