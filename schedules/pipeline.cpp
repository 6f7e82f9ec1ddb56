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
//  - ZB-H1 (Qi, Wan, Huang, Lin: "Zero Bubble Pipeline Parallelism", ICLR 2024, §3.1):
//    1F1B's order of F and B, with each backward split into B (input gradient, on the
//    critical path to the previous stage) and W (weight gradient), W passes filling the
//    waits. The order is that of a unit-time list schedule of all P ranks (T_F = T_B =
//    T_W, the paper's handcrafted setting): a rank runs its next F or B as soon as its
//    input has arrived, and while it waits, its oldest pending W. Rank r holds at most r
//    pending W passes: it has P − r − 1 fewer warm-up forwards than the first rank, so r
//    passes that only keep their weight-gradient inputs fit in the first rank's peak
//    (the paper's "same peak memory as 1F1B"). The first rank runs F B W after its
//    warm-up; the last defers P − 1 W passes and ends with them, so that its last B, which
//    the cool-down of every other rank waits for, comes P − 1 W passes earlier. The
//    paper's bubble: (P − 1)(T_F + T_B − T_W), against 1F1B's (P − 1)(T_F + T_B + T_W).
#include "schedules/pipeline.hpp"

#include <algorithm>

#include "schedules/error.hpp"

namespace twinscale::schedules {

namespace {

/// ZB-H1's order on every rank (see the file comment): a unit-time simulation of the
/// P ranks, F and B in each rank's 1F1B order, W passes when the next F/B must wait.
std::vector<std::vector<PipelineStep>> zero_bubble_h1(int64_t pp, int64_t micro_batches) {
  const auto P = static_cast<size_t>(pp);
  const auto M = static_cast<size_t>(micro_batches);
  constexpr int64_t kNever = INT64_MAX;
  std::vector<std::vector<PipelineStep>> fb(P), out(P);
  for (size_t r = 0; r < P; ++r)
    fb[r] = pipeline_order(PipelineKind::OneFOneB, pp, 1, micro_batches, static_cast<int64_t>(r));
  // end times of F and B per (rank, micro-batch)
  std::vector<std::vector<int64_t>> f_end(P, std::vector<int64_t>(M, kNever)), b_end = f_end;
  std::vector<size_t> next(P, 0);
  std::vector<std::vector<int64_t>> pending(P); // micro-batches whose W has not run, oldest first
  std::vector<size_t> pending_head(P, 0);
  size_t left = 3 * M * P;
  for (int64_t t = 0; left > 0; ++t) {
    for (size_t r = 0; r < P; ++r) {
      const size_t cap = std::min(r, M);
      const size_t waiting = pending[r].size() - pending_head[r];
      auto run_w = [&] {
        const int64_t mb = pending[r][pending_head[r]++];
        out[r].push_back({false, mb, 0, true});
        --left;
      };
      if (next[r] == fb[r].size()) {
        if (waiting > 0) run_w();
        continue;
      }
      const PipelineStep st = fb[r][next[r]];
      const auto mb = static_cast<size_t>(st.micro_batch);
      int64_t ready = 0;
      if (st.forward && r > 0) ready = f_end[r - 1][mb];
      if (!st.forward) ready = r + 1 < P ? b_end[r + 1][mb] : f_end[r][mb];
      if (waiting > cap) {
        run_w(); // past its bound of pending W passes
      } else if (ready <= t) {
        out[r].push_back(st);
        (st.forward ? f_end : b_end)[r][mb] = t + 1;
        if (!st.forward) pending[r].push_back(st.micro_batch);
        ++next[r];
        --left;
      } else if (waiting > 0) {
        run_w(); // fills the wait for the input
      }
    }
  }
  return out;
}

} // namespace

int64_t pipeline_warmup(PipelineKind kind, int64_t pp, int64_t vpp, int64_t micro_batches, int64_t pp_rank) {
  if (kind != PipelineKind::Interleaved) return std::min(pp - pp_rank - 1, micro_batches);
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
  if (kind == PipelineKind::ZeroBubbleH1) {
    TWINSCALE_ASSERT(vpp == 1, "ZB-H1 with vpp > 1");
    return zero_bubble_h1(pp, micro_batches)[static_cast<size_t>(pp_rank)];
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
