// FP8 GEMMs with Transformer Engine's delayed scaling recipe (precision.gemm = "fp8"), as
// Megatron-LM runs it (TE modules inside one fp8_autocast region per model chunk):
//  - Every GEMM of a transformer layer (QKV, projection, FC1, FC2, shared and routed
//    experts) takes FP8 inputs (E4M3 forward, E5M2 gradients) and runs at the GPU's FP8
//    tensor rate (Op::dtype = FP8, sim/device_model.cpp); outputs are BF16. The LM head and
//    the MoE router stay BF16 (Megatron keeps the output layer outside the autocast region).
//  - Casts (Kernel::Fp8Cast, memory-bound; each also computes the tensor's amax): the input
//    of every forward and data-gradient GEMM is cast with its transpose (read 2 B, write
//    1 + 1 B per element; the transpose serves the weight gradient). With sequence
//    parallelism the local shard is cast before the TP all-gather, which then moves FP8
//    (half the bytes), and the weight gradient transposes the gathered FP8 tensor (read 1,
//    write 1 B). Weights are cast with their transpose on the first micro-batch of an
//    iteration only (Megatron passes is_first_microbatch: TE caches the FP8 weights); with
//    ZeRO-3 the gathered weights are cast every micro-batch.
//  - Scaling state: per TE module 3 forward tensors (input, weight, output) and 2 backward
//    ones (output gradient, input gradient). At the exit of the autocast region (after a
//    chunk's forward for one micro-batch) and after the chunk's backward, the current amaxes
//    of all its tensors (fp32) are all-reduced with MAX over Megatron's amax reduction group
//    (parallel_state.get_amax_reduction_group: the tensor- and data-parallel ranks of the
//    pipeline stage, or TP only with --tp-only-amax-red), then one kernel rolls the amax
//    history (TE's DelayedScaling default length 1,024) and computes the new scales. The
//    TP × DP group is lowered as an all-reduce over TP followed by one over DP: MAX is
//    associative, so the result is the same, without a new communicator kind.
//  - Activation recomputation re-runs the input casts (not the weight casts nor the amax
//    reduction: TE reuses the saved scaling state).
#include "schedules/detail/layer_ops.hpp"

namespace twinscale::schedules::detail {

namespace {
constexpr double kBf16 = 2;
constexpr double kFp32 = 4;
constexpr int64_t kAmaxHistory = 1024; // TE DelayedScaling(amax_history_len) default
} // namespace

bool LayerEmitter::fp8_gemm(const std::string& name) const {
  return fp8_ && name.rfind("lm_head", 0) != 0 && name.rfind("moe.router", 0) != 0;
}

void LayerEmitter::fp8_cast(const std::string& name, int64_t elements, double bytes_per_element,
                            std::initializer_list<uint32_t> deps) {
  const double e = static_cast<double>(elements);
  // |x| and max for the amax, scale and convert: two operations per element
  b_.compute(OpKind::Elementwise, Kernel::Fp8Cast, name, 2 * e, e * bytes_per_element, {elements, 0, 0, 0}, deps);
}

void LayerEmitter::fp8_input(const std::string& name, int64_t rows, int64_t k, int64_t n, int64_t weights,
                             bool gathered) {
  if (!fp8_gemm(name)) return;
  const bool forward_gemm = name.find(".dgrad") == std::string::npos;
  if (forward_gemm && b_.labels.phase == Phase::Forward && casts_weights())
    fp8_cast(name + ".weight.fp8_cast", weights * k * n, kBf16 + 2);
  fp8_cast(name + ".fp8_cast", rows * k, gathered ? kBf16 + 1 : kBf16 + 2);
}

bool LayerEmitter::casts_weights() const {
  return fp8_ && (b_.labels.micro_batch <= 0 || job_.parallel.zero_stage == 3);
}

int64_t LayerEmitter::fp8_modules(int64_t layer) const {
  if (!job_.model.is_moe_layer(layer)) return 4; // QKV, projection, FC1, FC2
  // QKV, projection; each local expert's FC1 and FC2 (TE GroupedLinear keeps one scaling
  // state per GEMM); the shared experts as one MLP.
  return 2 + 2 * d_.experts_local + (d_.shared_experts > 0 ? 2 : 0);
}

void LayerEmitter::fp8_amax_update(bool forward, int64_t first_layer, int64_t layers) {
  if (!fp8_ || layers <= 0) return;
  int64_t modules = 0;
  for (int64_t l = first_layer; l < first_layer + layers; ++l) modules += fp8_modules(l);
  const int64_t tensors = modules * (forward ? 3 : 2);
  const double bytes = static_cast<double>(tensors) * kFp32;
  const std::string pass = forward ? "fp8.amax.fwd" : "fp8.amax.bwd";
  uint32_t last = b_.last_compute();
  if (d_.t > 1)
    last =
        b_.collective(OpKind::AllReduce, GroupKind::Tp, Stream::TpComm, pass + ".tp.ar", bytes, {last}, 0, DType::FP32);
  // The amax group is a communicator of its own (parallel_state's _AMAX_REDUCTION_GROUP,
  // created apart from the data-parallel group even where its ranks are the same), so its
  // all-reduce does not queue behind the DP stream's gradient reduce-scatters and
  // parameter all-gathers: it runs, launched in program order, on the TP stream.
  if (job_.options.fp8_amax_reduction == Fp8AmaxReduction::TpDp && job_.parallel.dp > 1)
    last =
        b_.collective(OpKind::AllReduce, GroupKind::Dp, Stream::TpComm, pass + ".dp.ar", bytes, {last}, 0, DType::FP32);
  if (last != b_.last_compute()) b_.wait_before_next_compute(last);
  // roll the history (read and write it), then scale = (FP8 max / amax) / 2^margin
  const int64_t history = kAmaxHistory * tensors;
  b_.compute(OpKind::Elementwise, Kernel::Fp8Cast, pass + ".scale_update", 4.0 * static_cast<double>(tensors),
             static_cast<double>(history) * 2 * kFp32 + static_cast<double>(tensors) * 3 * kFp32, {history, 0, 0, 0});
}

} // namespace twinscale::schedules::detail
