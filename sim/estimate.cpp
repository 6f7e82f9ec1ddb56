#include "sim/estimate.hpp"

#include <algorithm>
#include <string>

namespace twinscale::sim {

namespace {
// Measured per-rank costs (`simulate --mode flow` of gpt-175b-megascale, 32 micro-batches
// per pipeline, peak RSS of the flow child; 2026-12-06): 1.16 GiB at 12,288 GPUs, 2.93 GiB
// at 32,768, 5.76 GiB at 65,536, 11.46 GiB at 131,072 — 91–95 KiB per added rank, most
// of it the stacks of the actors that carry the flows in flight (4 per GPU in a DP phase,
// 16 KiB each: FlowEngine::Impl::kWorkerStackKiB), then SimGrid's port hosts and links.
// 96 KiB/rank over a 256 MiB base leans high (1.46 GiB at 12,288, 12.4 GiB at 131,072).
// Without aggregation every rank and every ring step runs: counted as 4× (each rank's
// collectives split into their steps).
constexpr double kFlowBytesPerRank = 96.0 * 1024;
constexpr double kFlowBaseBytes = 256.0 * 1024 * 1024; // SimGrid, the process, the model
constexpr double kNoAggregateFactor = 4.0;
// Fabric graph: bench_fabric, 8.5 MiB for 12,288 GPUs (≈ 0.7 KiB per GPU); 1 KiB leans high.
constexpr double kFabricBytesPerGpu = 1024;
// Analytic mode keeps per-rank summaries only: 1 KiB per rank.
constexpr double kAnalyticBytesPerRank = 1024;
// Wall time: bench_sim, flow 21.4 s at 12,288 ranks (1.7 ms per rank); analytic 0.15 s
// (12 µs per rank), on the 2-core CI machine. Past 32,768 ranks the flow mode's DP phases
// (a flow per GPU in flight, one LMM system re-solved at each completion) grow as the
// square: 2026-12-06, CPU seconds at load 5–11, 13 s at 12,288, 37 s at 32,768, 103 s at
// 65,536 and 951 s at 131,072; 2 ms per rank × max(1, ranks / 32,768) gives 25, 66, 262
// and 1,049 s.
constexpr double kFlowSecondsPerRank = 2e-3;
constexpr double kFlowQuadraticFromRanks = 32768;
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
    e.seconds += factor * kFlowSecondsPerRank * ranks * std::max(1.0, ranks / kFlowQuadraticFromRanks);
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
