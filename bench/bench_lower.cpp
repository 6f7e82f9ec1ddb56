// This benchmark lowers gpt-175b-megascale at 12,288 GPUs (global batch 6,144) and
// validates it, printing wall time and peak RSS of each step.
// Usage: bench_lower [preset] [gpus] [global_batch]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/measure.hpp"
#include "config/job_file.hpp"
#include "schedules/schedule.hpp"
#include "schedules/validate.hpp"

int main(int argc, char** argv) {
  using namespace twinscale;
  const std::string preset = argc > 1 ? argv[1] : "gpt-175b-megascale";
  const int64_t gpus = argc > 2 ? std::atoll(argv[2]) : 12288;
  const int64_t batch = argc > 3 ? std::atoll(argv[3]) : 6144;
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
  return violations.empty() ? 0 : 1;
}
