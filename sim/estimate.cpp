#include "sim/estimate.hpp"

#include <string>

namespace twinscale::sim {

namespace {
// Measured per-rank costs (bench_sim on gpt-175b-megascale, README "Simulated sizes"):
// flow mode 1.79 GiB RSS at 12,288 GPUs and 983 MiB at 3,072 — ≈ 92 KiB per added rank
// (SimGrid hosts, links, actors and ~25 flows per rank). At 131,072 GPUs it was still
// growing past 19 GB when the kernel killed it (issue 12), so the cost per rank grows
// with scale (more flows per collective); 200 KiB/rank (2.6 GiB at 12,288, 25 GiB at
// 131,072) leans high. Without aggregation every rank and every ring step runs: counted
// as 4× (each rank's collectives split into their steps).
constexpr double kFlowBytesPerRank = 200.0 * 1024;
constexpr double kFlowBaseBytes = 256.0 * 1024 * 1024; // SimGrid, the process, the model
constexpr double kNoAggregateFactor = 4.0;
// Fabric graph: bench_fabric, 8.5 MiB for 12,288 GPUs (≈ 0.7 KiB per GPU); 1 KiB leans high.
constexpr double kFabricBytesPerGpu = 1024;
// Analytic mode keeps per-rank summaries only: 1 KiB per rank.
constexpr double kAnalyticBytesPerRank = 1024;
// Wall time: bench_sim, flow 21.4 s at 12,288 ranks (1.7 ms per rank); analytic 0.15 s
// (12 µs per rank), on the 2-core CI machine.
constexpr double kFlowSecondsPerRank = 1.8e-3;
constexpr double kAnalyticSecondsPerRank = 1.5e-5;
} // namespace

schedules::ResourceEstimate estimate_simulation(const schedules::JobSpec& job, SimMode mode, bool aggregate) {
  const auto& p = job.parallel;
  const double ranks = static_cast<double>(p.gpus());
  schedules::ResourceEstimate e = schedules::estimate_lowering(job);
  e.memory_bytes += kFabricBytesPerGpu * ranks;
  if (mode == SimMode::Flow) {
    const double factor = aggregate ? 1.0 : kNoAggregateFactor;
    e.memory_bytes += kFlowBaseBytes + factor * kFlowBytesPerRank * ranks;
    e.seconds += factor * kFlowSecondsPerRank * ranks;
  } else {
    e.memory_bytes += kAnalyticBytesPerRank * ranks;
    e.seconds += kAnalyticSecondsPerRank * ranks;
  }
  return e;
}

schedules::ResourceEstimate check_simulation_fits(const schedules::JobSpec& job, SimMode mode, bool aggregate) {
  const auto e = estimate_simulation(job, mode, aggregate);
  const int64_t ranks = job.parallel.gpus();
  std::string how;
  if (mode == SimMode::Flow) {
    if (!aggregate)
      how += "drop --no-aggregate (about " +
             schedules::format_bytes(estimate_simulation(job, mode, true).memory_bytes) + "), ";
    how += "use --mode analytic (about " +
           schedules::format_bytes(estimate_simulation(job, SimMode::Analytic, true).memory_bytes) + "), ";
  }
  how += "or fewer GPUs (--gpus)";
  schedules::require_fits("simulating job '" + job.name + "' in " + std::string(to_string(mode)) + " mode on " +
                              std::to_string(ranks) + " GPUs",
                          e, how);
  return e;
}

} // namespace twinscale::sim
