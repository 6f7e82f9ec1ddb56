// The CUDA device's FP8 kernels (fp8_kernels.cu; Transformer Engine's delayed scaling as
// schedules/detail/fp8.cpp lowers it) and the probe's transfer patterns. Declared without
// CUDA types, as kernels.hpp. Each returns the cudaError_t of its launch as an int.
#pragma once

#include <cstdint>

namespace twinscale::backend::cuda {

enum class Fp8CastMode : int {
  Cast = 0,          // bf16 → FP8 (the local shard before a sequence-parallel all-gather)
  CastTranspose = 1, // bf16 → FP8 and its transpose (the weight gradient's operand)
  Transpose = 2,     // FP8 → its transpose (the gathered FP8 tensor, for the weight gradient)
};

/// `rows`×`cols` row-major: y = saturate(x · *scale) in E4M3 (E5M2 when `e5m2`), and in
/// CastTranspose also yt = yᵀ (cols×rows); max |x| is folded into *amax (atomic max, x
/// non-negative floats order as their bits). Transpose reads x as FP8 bytes and writes
/// only yt (scale and amax unused: may be null). Tiles of 32×32 through shared memory (coalesced reads and writes).
int launch_fp8_cast(Fp8CastMode mode, bool e5m2, const void* x, void* y, void* yt, int64_t rows, int64_t cols,
                    const float* scale, float* amax, void* stream);

/// Delayed scaling's update of `tensors` tensors with amax histories of `len`: the
/// history is rolled from `from` into `to` (entry 0 becomes the current amax, which is
/// reset to 0), scale = fp8_max / max(history) (1 while the history is all zero;
/// margin 0, TE's DelayedScaling default with amax_compute_algo "max") and scale_inv =
/// 1 / scale (what the GEMMs dequantise with).
int launch_fp8_scale_update(const float* from, float* to, float* amax, float* scale, float* scale_inv, int64_t tensors,
                            int64_t len, float fp8_max, void* stream);

/// Fills `bytes` with pseudo-random finite FP8 values, E4M3 and E5M2 alike (exponent
/// never all ones): GEMM operands with data that toggles, as training's does.
int launch_fp8_fill(void* y, int64_t bytes, void* stream);

/// Transfers of the probe: `n` bf16 elements set to `value`, or, when `by_chunk`, to
/// (i / per) + 1 (the member that sent chunk i / per, counted from 1).
int launch_pattern_fill(void* y, int64_t n, int64_t per, float value, bool by_chunk, void* stream);
/// Adds to *bad (device memory) the elements of `y` that differ from that pattern.
int launch_pattern_check(const void* y, int64_t n, int64_t per, float value, bool by_chunk, unsigned long long* bad,
                         void* stream);

} // namespace twinscale::backend::cuda
