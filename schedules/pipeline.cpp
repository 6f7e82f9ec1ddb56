// Pipeline orders, following Megatron-LM megatron/core/pipeline_parallel/schedules.py:
//  - forward_backward_pipelining_without_interleaving: warm-up = min(P − r − 1, M)
//    forwards, then (M − warm-up) × (forward, backward), then the remaining backwards;
//  - forward_backward_pipelining_with_interleaving: M·V virtual micro-batches; warm-up =
//    (P − r − 1)·2 + (V − 1)·G with the micro-batch group size G = P, clamped to M·V
//    (and all M·V when M = P, "all_warmup_microbatches" in the Megatron-LM/Apex versions
//    with that special case);
//    virtual micro-batch k runs model chunk (k mod (P·V)) / P (reversed, V − 1 − that,
//    for backward) on micro-batch (k / (P·V))·P + k mod P (get_model_chunk_id,
//    get_microbatch_id_in_model_chunk). Steady state: forward k + warm-up, then
//    backward k; cool-down: the remaining backwards.
#include "schedules/pipeline.hpp"

#include <algorithm>

#include "schedules/error.hpp"

namespace twinscale::schedules {

int64_t pipeline_warmup(PipelineKind kind, int64_t pp, int64_t vpp, int64_t micro_batches, int64_t pp_rank) {
  if (kind == PipelineKind::OneFOneB) return std::min(pp - pp_rank - 1, micro_batches);
  const int64_t total = micro_batches * vpp;
  if (micro_batches == pp) return total; // Megatron: all warm-up when M == P
  return std::min((pp - pp_rank - 1) * 2 + (vpp - 1) * pp, total);
}

std::vector<PipelineStep> pipeline_order(PipelineKind kind, int64_t pp, int64_t vpp, int64_t micro_batches,
                                         int64_t pp_rank) {
  TWINSCALE_ASSERT(pp >= 1 && vpp >= 1 && micro_batches >= 1, "bad pipeline sizes");
  TWINSCALE_ASSERT(pp_rank >= 0 && pp_rank < pp, "pp_rank out of range");
  std::vector<PipelineStep> out;
  if (kind == PipelineKind::OneFOneB) {
    TWINSCALE_ASSERT(vpp == 1, "1F1B with vpp > 1");
    const int64_t warmup = pipeline_warmup(kind, pp, vpp, micro_batches, pp_rank);
    out.reserve(2 * micro_batches);
    for (int64_t i = 0; i < warmup; ++i) out.push_back({true, i, 0});
    for (int64_t i = 0; i < micro_batches - warmup; ++i) {
      out.push_back({true, warmup + i, 0});
      out.push_back({false, i, 0});
    }
    for (int64_t i = micro_batches - warmup; i < micro_batches; ++i) out.push_back({false, i, 0});
    return out;
  }
  const int64_t total = micro_batches * vpp;
  const int64_t group = pp * vpp;
  auto chunk_of = [&](int64_t k, bool forward) {
    const int64_t c = (k % group) / pp;
    return forward ? c : vpp - 1 - c;
  };
  auto micro_batch_of = [&](int64_t k) { return (k / group) * pp + k % pp; };
  auto step = [&](int64_t k, bool forward) { return PipelineStep{forward, micro_batch_of(k), chunk_of(k, forward)}; };
  const int64_t warmup = pipeline_warmup(kind, pp, vpp, micro_batches, pp_rank);
  out.reserve(2 * total);
  for (int64_t k = 0; k < warmup; ++k) out.push_back(step(k, true));
  for (int64_t k = 0; k < total - warmup; ++k) {
    out.push_back(step(k + warmup, true));
    out.push_back(step(k, false));
  }
  for (int64_t k = total - warmup; k < total; ++k) out.push_back(step(k, false));
  return out;
}

} // namespace twinscale::schedules
