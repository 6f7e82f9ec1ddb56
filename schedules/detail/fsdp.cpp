// ZeRO-3 / FSDP (parallel.zero_stage = 3): parameters, gradients and optimizer states are
// all sharded over DP (routed experts over their expert data-parallel group). The unit of
// gathering is one transformer layer, as FSDP's usual auto-wrap policy: before every pass
// that uses a layer (each micro-batch's forward, and its backward, whose recomputation
// shares the gather) the layer's parameters are all-gathered, and after its backward its
// gradients are reduce-scattered into the shard (every micro-batch: gradients are never
// held whole, unlike ZeRO-2). schedule.fsdp_prefetch = d: the gathers of the next d
// layers are issued before the current layer computes (FSDP's forward/backward prefetch;
// d = 0: each gather blocks its layer). The chunk's other
// parameters (embedding, LM head, final norm) follow ZeRO-2's per-chunk path.
#include <algorithm>
#include <array>

#include "schedules/detail/stage_lowering.hpp"
#include "schedules/memory.hpp"

namespace twinscale::schedules::detail {

double StageLowering::chunk_other_parameters(int64_t chunk) const {
  const LayerRange r = stage_layers(job_, chunk * P_ + pp_rank_);
  double layers = 0;
  for (int64_t l = r.first; l < r.first + r.count; ++l) layers += layer_parameter_count(job_, l);
  return chunk_parameters(job_, pp_rank_, chunk) - layers;
}

std::vector<uint32_t> StageLowering::fsdp_gather_layer(int64_t layer, int32_t priority) {
  const auto& par = job_.parallel;
  const double experts = layer_expert_parameters(job_, layer);
  const double dense = layer_parameter_count(job_, layer) - experts;
  std::vector<uint32_t> out;
  const OpLabels saved = b_.labels;
  b_.labels.layer = static_cast<int32_t>(layer);
  if (par.dp_cp() > 1)
    out.push_back(b_.collective(OpKind::AllGather, GroupKind::Dp, Stream::DpComm, "fsdp.param.ag", dense * 2,
                                {b_.last_compute()}, priority));
  if (experts > 0 && par.expert_dp() > 1)
    out.push_back(b_.collective(OpKind::AllGather, GroupKind::ExpertDp, Stream::DpComm, "fsdp.expert.param.ag",
                                experts * 2, {b_.last_compute()}, priority));
  b_.labels = saved;
  return out;
}

void StageLowering::fsdp_reduce_layer(int64_t layer) {
  const auto& par = job_.parallel;
  fsdp_grad_reduce_input(layer);
  const bool fp32 = job_.options.grad_reduce_fp32;
  const DType dtype = fp32 ? DType::FP32 : DType::BF16;
  const double width = fp32 ? 4 : 2;
  const double experts = layer_expert_parameters(job_, layer);
  const double dense = layer_parameter_count(job_, layer) - experts;
  const int32_t priority = job_.options.overlap.dp ? 1 : 0;
  if (par.dp_cp() > 1)
    grad_reduced_.push_back(b_.collective(OpKind::ReduceScatter, GroupKind::Dp, Stream::DpComm, "fsdp.grad.rs",
                                          dense * width, {b_.last_compute()}, priority, dtype));
  if (experts > 0 && par.expert_dp() > 1)
    grad_reduced_.push_back(b_.collective(OpKind::ReduceScatter, GroupKind::ExpertDp, Stream::DpComm,
                                          "fsdp.expert.grad.rs", experts * width, {b_.last_compute()}, priority,
                                          dtype));
  if (!job_.options.overlap.dp) b_.wait_before_next_compute(grad_reduced_);
}

void StageLowering::fsdp_copy_out(int64_t layer) {
  // PyTorch FSDP2 (foreach_all_gather_copy_out, on the compute stream once the gather is
  // done): the gathered flat buffer is copied into each parameter's own tensor —
  // split_with_sizes_copy reads and writes every gathered byte.
  if (!job_.options.fsdp_copy_out || job_.parallel.dp_cp() <= 1) return;
  const double params = layer_parameter_count(job_, layer);
  const OpLabels saved = b_.labels;
  b_.labels.layer = static_cast<int32_t>(layer);
  b_.compute(OpKind::Elementwise, Kernel::Copy, "fsdp.param.copy_out", 0, 2 * 2 * params, // read + write bf16
             {static_cast<int64_t>(params), 0, 0, 0});
  b_.labels = saved;
}

void StageLowering::fsdp_grad_reduce_input(int64_t layer) {
  // PyTorch FSDP2 (foreach_reduce: foreach_reduce_scatter_copy_in on the reduce-scatter
  // stream, which waits for the backward; then current_stream.wait_stream(reduce_scatter_stream)
  // before the gradients are freed): the copy sits between this layer's backward and the
  // next compute, so it is costed on the compute stream. torch.cat reads the 16-bit
  // gradients and writes the reduce dtype (fp32: 2 + 4 bytes per gradient).
  const auto& opt = job_.options;
  if ((!opt.fsdp_grad_copy_in && !opt.fsdp_grad_predivide) || job_.parallel.dp_cp() <= 1) return;
  const double params = layer_parameter_count(job_, layer);
  const double width = opt.grad_reduce_fp32 ? 4 : 2;
  const std::array<int64_t, 4> shape{static_cast<int64_t>(params), 0, 0, 0};
  const OpLabels saved = b_.labels;
  b_.labels.layer = static_cast<int32_t>(layer);
  if (opt.fsdp_grad_copy_in)
    b_.compute(OpKind::Elementwise, Kernel::Copy, "fsdp.grad.copy_in", 0, (2 + width) * params, shape);
  // FSDP2 of early 2024 (foreach_reduce_scatter): reduce_scatter_input.div_(predivide) runs
  // on the reduce-scatter stream before copy_in_event is recorded, and the compute stream
  // waits for that event: one more pass reading and writing the reduce input (the flat
  // copy in the reduce dtype; without a copy-in, the 16-bit gradients in place). The
  // factor (_init_grad_divide_factors: f doubled from 1 while N % f == 0 and N / f > f) is
  // at least 2 for every DP size N >= 2, so the pass always runs.
  if (opt.fsdp_grad_predivide)
    b_.compute(OpKind::Elementwise, Kernel::Copy, "fsdp.grad.predivide", 0,
               2 * (opt.fsdp_grad_copy_in ? width : 2) * params, shape);
  b_.labels = saved;
}

void StageLowering::emit_layers(LayerRange layers, bool forward) {
  const bool zero3 = job_.parallel.zero_stage == 3;
  const int64_t depth = job_.options.fsdp_prefetch;
  const auto priority = static_cast<int32_t>(2 * V_ + 1); // needed sooner than any chunk's gather
  auto layer_at = [&](int64_t i) { return forward ? layers.first + i : layers.first + layers.count - 1 - i; };
  std::vector<std::vector<uint32_t>> gathered(static_cast<size_t>(layers.count));
  int64_t issued = 0; // gathers emitted so far in this pass
  for (int64_t i = 0; i < layers.count; ++i) {
    const int64_t layer = layer_at(i);
    if (zero3) {
      // the layer's own gather and up to `depth` more run ahead of the computation
      for (; issued < std::min(layers.count, i + 1 + depth); ++issued)
        gathered[static_cast<size_t>(issued)] = fsdp_gather_layer(layer_at(issued), priority);
      b_.wait_before_next_compute(gathered[static_cast<size_t>(i)]);
      fsdp_copy_out(layer);
    }
    b_.labels.layer = static_cast<int32_t>(layer);
    if (forward) {
      if (auto g = bucket_gather_.find(layer); g != bucket_gather_.end()) { // ZeRO-1 bucket (gather_buckets)
        b_.wait_before_next_compute(g->second);
        bucket_gather_.erase(g);
        launch_next_bucket(); // Megatron-Core's pre-hook launches the next bucket's gather
      }
      layers_.layer_forward();
    } else {
      if (job_.options.recompute && layer % job_.options.recompute_every == 0) {
        b_.labels.phase = Phase::Recompute;
        layers_.layer_forward();
        b_.labels.phase = Phase::Backward;
      }
      layers_.layer_backward();
      if (zero3) fsdp_reduce_layer(layer);
      if (bucketing_) add_to_bucket(b_.labels.chunk, layer);
    }
  }
  b_.labels.layer = -1;
}

} // namespace twinscale::schedules::detail
