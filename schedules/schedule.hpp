// The schedule: for every rank, the ordered program of ops it runs. Ranks with
// identical programs share one Program (all ranks of one pipeline stage, typically),
// so a 12,288-rank schedule holds a handful of programs, not 12,288 copies.
//
// Execution semantics (what sim/, backend/ and the validator all implement):
//  - ops on one stream of a rank start in program order, each after the previous one
//    on that stream has completed (CUDA stream semantics);
//  - an op also waits for its dependencies (indices of earlier ops in the same program);
//  - a collective completes only once every member of its group has reached it; members
//    issue a group's collectives in the same order;
//  - a Send completes with its matching Recv (same pair, same order, equal bytes).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/helper_thread_mode.hpp"
#include "schedules/job.hpp"
#include "schedules/layout.hpp"
#include "schedules/op.hpp"

namespace twinscale::schedules {

inline constexpr int kScheduleFormatVersion = 1;

struct Program {
  std::vector<Op> ops;
  std::vector<uint32_t> deps; // Op::dep_begin/dep_count index here

  std::span<const uint32_t> deps_of(const Op& op) const { return {deps.data() + op.dep_begin, op.dep_count}; }
  std::span<const uint32_t> deps_of(size_t op_index) const { return deps_of(ops[op_index]); }
};

/// Memory per rank, in bytes (the largest over ranks, per pipeline stage).
struct MemoryEstimate {
  double parameters_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  double total_bytes() const { return parameters_bytes + gradients_bytes + optimizer_bytes + activations_bytes; }
};

struct Schedule {
  int version = kScheduleFormatVersion;
  JobSpec job; // effective job after presets/overrides
  Layout layout;
  std::vector<Program> programs;
  std::vector<uint32_t> program_of_rank;       // size layout.world()
  std::vector<std::string> names;              // Op::name indexes here
  std::vector<MemoryEstimate> memory_by_stage; // size layout.pp
  double model_flops_per_iteration = 0;        // excludes recomputation (for MFU)

  int64_t world() const { return layout.world(); }
  const Program& program(int64_t rank) const { return programs[program_of_rank[rank]]; }
};

/// What lowering needs to know about the hardware (kept as plain numbers so that
/// schedules/ depends on nothing of ours).
struct LoweringTarget {
  double gpu_memory_bytes = 80e9;
  bool check_memory = true;
  /// Which GPU gives gpu_memory_bytes, named when a stage does not fit (mixed models:
  /// the tightest, e.g. "gpu_groups[0] (A100-SXM-40GB, servers 0-3)"); empty: "the GPU".
  std::string gpu_memory_holder;
  /// A layer pass that would emit the same ops as one already emitted in its program is
  /// copied from it (LayerEmitter::set_replay): the same schedule, lowered in less time.
  /// false emits every op (tests compare the two).
  bool replay_layers = true;
  /// Whether a helper thread lowers some of the programs at the same time (from the last
  /// one down, for_each_index_with_helper in common/helper_thread.hpp, its op names
  /// renumbered after): the same schedule, the same first error.
  HelperThread helper_thread = HelperThread::Off;
};

/// Lowers a job into a schedule. Throws JobError for impossible parallelism or a model
/// that does not fit `target.gpu_memory_bytes`.
Schedule lower(const JobSpec& job, const LoweringTarget& target = {});

/// Model FLOPs per iteration by the closed form of Narayanan et al. (SC'21), eq. 3,
/// without recomputation: 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)).
double narayanan_model_flops(const ModelSpec& model, int64_t global_batch);

} // namespace twinscale::schedules
