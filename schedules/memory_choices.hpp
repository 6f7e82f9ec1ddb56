// Per-rank memory of every parallel layout of a job at its GPU count: the memory check
// "for each parallel choice" (`twinscale schedule memory`).
#pragma once

#include <cstdint>
#include <vector>

#include "schedules/job.hpp"
#include "schedules/schedule.hpp"

namespace twinscale::schedules {

struct MemoryChoice {
  ParallelSpec parallel;  // the layout (dp = gpus / (tp·pp))
  bool recompute = false; // full activation recomputation
  MemoryEstimate worst;   // of the stage with the largest total
  int64_t worst_stage = 0;
  bool fits = false; // worst.total_bytes() ≤ the GPU's memory
};

/// Every layout the job's model admits on job.parallel.gpus() GPUs: tp ∈ {1, 2, 4, 8},
/// pp a divisor of layers (or, for jobs with uneven first/last stages, the job's own pp),
/// ZeRO stage 0–3, recomputation off and on; the job's other options kept (vpp and the
/// interleaved schedule where they still divide, else 1F1B). Layouts check_job refuses
/// are left out. Ordered by tp, pp, zero stage, recomputation.
std::vector<MemoryChoice> memory_by_parallel_choice(const JobSpec& job, double gpu_memory_bytes);

} // namespace twinscale::schedules
