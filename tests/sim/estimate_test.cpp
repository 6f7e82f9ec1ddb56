// The flow mode's up-front memory estimate (sim/estimate.hpp) against the peak RSS measured
// for gpt-175b-megascale (`/usr/bin/time -v twinscale simulate --mode flow`, 32 micro-batches
// per pipeline; 2026-12-06, 16 KiB worker stacks): at or above each measurement, so that a
// run it admits fits, and within 1.5× of it, so that it does not refuse runs that fit.
#include <catch2/catch.hpp>

#include "config/job_file.hpp"
#include "sim/estimate.hpp"

namespace twinscale::sim {

TEST_CASE("flow-mode memory estimate: above the measured peak RSS and within 1.5x of it", "[sim][estimate]") {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  struct Measured {
    int64_t gpus;
    int64_t global_batch;
    double peak_rss_gib;
  };
  for (const Measured m : {Measured{12288, 6144, 1.155}, Measured{32768, 16384, 2.928}, Measured{65536, 32768, 5.763},
                           Measured{131072, 65536, 11.46}}) {
    auto job = config::load_job_preset("gpt-175b-megascale");
    config::apply_overrides(job, m.gpus, m.global_batch);
    const double estimate = estimate_simulation(job, SimMode::Flow, true).memory_bytes / kGiB;
    INFO(m.gpus << " GPUs: estimate " << estimate << " GiB, measured " << m.peak_rss_gib << " GiB");
    CHECK(estimate >= m.peak_rss_gib);
    CHECK(estimate <= 1.5 * m.peak_rss_gib);
  }
  // issue 30's target: GPT-175B at 131,072 GPUs in flow mode within 16 GiB
  auto job = config::load_job_preset("gpt-175b-megascale");
  config::apply_overrides(job, 131072, 65536);
  CHECK(estimate_simulation(job, SimMode::Flow, true).memory_bytes < 16 * kGiB);
}

} // namespace twinscale::sim
