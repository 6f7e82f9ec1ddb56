// The order of forward and backward passes on one pipeline rank: 1F1B and interleaved
// 1F1B exactly as Megatron-LM issues them, and ZB-H1 (Qi et al., ICLR'24), whose
// backward is split into B (input gradient) and W (weight gradient) passes.
#pragma once

#include <cstdint>
#include <vector>

#include "schedules/job.hpp"

namespace twinscale::schedules {

struct PipelineStep {
  bool forward = true;
  int64_t micro_batch = 0;
  int64_t chunk = 0;   // model chunk on this rank; it holds virtual stage chunk·P + rank
  bool weight = false; // ZB-H1's W pass (forward = false): the weight gradients only; a
                       // backward step of ZB-H1 is then the B pass (input gradients)
  bool operator==(const PipelineStep&) const = default;
};

/// The ordered passes of pipeline rank `pp_rank` of `pp` ranks with `vpp` model chunks
/// and `micro_batches` micro-batches. For OneFOneB and ZeroBubbleH1, vpp must be 1.
std::vector<PipelineStep> pipeline_order(PipelineKind kind, int64_t pp, int64_t vpp, int64_t micro_batches,
                                         int64_t pp_rank);

/// Warm-up forward passes of `pp_rank` (before the first backward).
int64_t pipeline_warmup(PipelineKind kind, int64_t pp, int64_t vpp, int64_t micro_batches, int64_t pp_rank);

} // namespace twinscale::schedules
