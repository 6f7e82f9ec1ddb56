#include "schedules/estimate.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "schedules/error.hpp"
#include "schedules/input_file.hpp"
#include "schedules/limits.hpp"
#include "schedules/op.hpp"

namespace twinscale::schedules {

namespace {
// Per-op cost in memory: the Op itself, ~2 dependency indices, and the lowering's
// temporaries; bench_lower measures 24 MiB RSS for 213 k ops (≈ 118 B/op including the
// process), so 2·sizeof(Op) + 16 leans high.
constexpr double kBytesPerOp = 2.0 * sizeof(Op) + 16.0;
// Lowering time per op: bench_lower, 0.09 s for 213 k ops (0.42 µs/op) on the 2-core CI
// machine; 1 µs leaves room for a loaded machine.
constexpr double kSecondsPerOp = 1e-6;
} // namespace

double estimate_ops_per_program(const JobSpec& job) {
  const auto& p = job.parallel;
  const double m =
      static_cast<double>(p.global_batch) / (static_cast<double>(p.dp) * static_cast<double>(p.micro_batch));
  const double layers_per_rank = static_cast<double>(job.model.layers) / static_cast<double>(p.pp);
  const double chunks = static_cast<double>(std::max<int64_t>(job.options.overlap.tp_chunks, 1));
  // Per micro-batch and layer: ~24 forward + backward compute and collective ops, 16 more
  // per TP chunk when TP overlap splits GEMMs; per micro-batch the p2p sends/receives and
  // embedding/loss; per layer the optimizer and DP gradient ops. Against the presets the
  // lowered count is 0.55–0.95 of this (tiny-*, gpt-175b-*, gpt-530b-megascale).
  // A MoE layer adds ~32 (router, permutations, four all-to-alls, shared experts).
  const double moe = job.model.experts > 0 ? 32.0 : 0.0;
  // Context parallelism: ~6 ring sends/receives per step and layer (forward K/V, backward
  // K/V and dK/dV) and one more attention op per step.
  const double cp = job.parallel.cp > 1 ? 8.0 * static_cast<double>(job.parallel.cp) : 0.0;
  const double per_iteration =
      m * layers_per_rank * (48.0 + 16.0 * chunks + moe + cp) + 16.0 * m + 16.0 * layers_per_rank + 64.0;
  return static_cast<double>(job.options.iterations) * per_iteration;
}

ResourceEstimate estimate_lowering(const JobSpec& job) {
  const double ops = estimate_ops_per_program(job);
  // one per stage by tp×dp symmetry (per stage and cp rank with context parallelism)
  const double programs = static_cast<double>(job.parallel.pp) * static_cast<double>(job.parallel.cp);
  const double ranks = static_cast<double>(job.parallel.gpus());
  ResourceEstimate e;
  e.memory_bytes = programs * ops * kBytesPerOp + 4.0 * ranks;
  e.seconds = programs * ops * kSecondsPerOp;
  return e;
}

std::string format_bytes(double bytes) {
  char buf[64];
  if (bytes >= 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  else
    std::snprintf(buf, sizeof buf, "%.0f MiB", bytes / (1024.0 * 1024));
  return buf;
}

std::string format_seconds(double seconds) {
  char buf[64];
  if (seconds < 1)
    std::snprintf(buf, sizeof buf, "%.2f s", seconds);
  else if (seconds < 600)
    std::snprintf(buf, sizeof buf, "%.0f s", seconds);
  else if (seconds < 36000)
    std::snprintf(buf, sizeof buf, "%.0f min", seconds / 60);
  else
    std::snprintf(buf, sizeof buf, "%.3g h", seconds / 3600);
  return buf;
}

void require_fits(const std::string& what, const ResourceEstimate& estimate, const std::string& how_to_proceed) {
  const MemoryRoom available = memory_room(); // the least of free memory, ulimit -v and the cgroup's limit
  if (estimate.memory_bytes <= available.bytes) return;
  throw JobError(what + " needs about " + format_bytes(estimate.memory_bytes) + " of memory and " +
                 format_seconds(estimate.seconds) + " (estimate), but this process may use " +
                 format_bytes(available.bytes) + " (" + available.source + "); " + how_to_proceed);
}

void check_lowering_size(const JobSpec& job) {
  const double ops = estimate_ops_per_program(job);
  if (ops > static_cast<double>(kMaxOpsPerProgram))
    throw JobError("job '" + job.name + "': about " + std::to_string(static_cast<long long>(ops)) +
                   " ops per rank, more than 2^31 (op indices are 32-bit); lower parallel.global_batch "
                   "(micro-batches per pipeline: " +
                   std::to_string(job.parallel.micro_batches()) + ") or schedule.iterations");
  require_fits("lowering job '" + job.name + "' (" + std::to_string(static_cast<long long>(ops)) + " ops per rank, " +
                   std::to_string(job.parallel.pp) + " distinct programs)",
               estimate_lowering(job),
               "lower parallel.global_batch (micro-batches per pipeline: " +
                   std::to_string(job.parallel.micro_batches()) + "), schedule.iterations or parallel.pp");
}

} // namespace twinscale::schedules
