// The probe's kernel replay as a run executes it: the rank's compute ops,
// communication left out, run by the real executor on a real CPU device — one worker
// thread per compute stream, the executor's thread issuing each op once ready and
// idling between completions, the device's warm start and start barrier — so every
// kernel is timed exactly as the run times it, with whatever the executor's thread and
// the hand-off cost the worker's core (docs/backend.md "Probe").
#pragma once

#include <cstdint>
#include <vector>

#include "schedules/schedule.hpp"

namespace twinscale::backend::detail {

class MpiGroups;

/// `schedule` with every communication op removed from every program (dependencies on
/// them dropped, the rest renumbered). `original[p][i]`: op i of compute-only program p
/// in `schedule`'s program p.
schedules::Schedule compute_only(const schedules::Schedule& schedule, std::vector<std::vector<uint32_t>>& original);

struct ReplayedOp {
  uint32_t op = 0; // index in the original program
  double seconds = 0;
};

struct Replay {
  std::vector<ReplayedOp> ops; // every compute op of the rank's program, in program order
  /// Idle time between an op's end and the next op's start on the Compute stream
  /// (each issued once its predecessor completed: the executor → worker hand-off).
  std::vector<double> hand_off_s;
};

/// One replay of `rank`'s program of `compute` (from compute_only()) on a fresh CPU
/// device (collective: every rank calls it; `groups` on MPI_COMM_WORLD).
Replay replay_like_run(const schedules::Schedule& compute, const std::vector<std::vector<uint32_t>>& original,
                       int64_t rank, const MpiGroups& groups, int64_t shape_divisor, double max_buffer_bytes);

} // namespace twinscale::backend::detail
