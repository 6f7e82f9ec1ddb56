// Memory-bound kernels of the CUDA device (kernels.cu): one launch per scheduled op, on
// synthetic bf16 tensors. Declared without CUDA types so that cuda_device.cpp (host
// compiler) and kernels.cu (nvcc) share them.
#pragma once

#include <cstdint>

namespace twinscale::backend::cuda {

enum class ElementwiseMode : int {
  LayerNorm = 0,    // rows of `row` elements: mean, variance and normalise in one launch
  LayerNormUnfused, // statistics, normalise and affine as three launches
  Gelu,             // bias-add then GeLU as two launches
  FusedBiasGelu,    // one launch
  Dropout,
  ResidualAdd,
  CrossEntropy, // row-wise log-sum-exp over rows of `row` elements
  Embedding,    // gather: y[i] = x[(i · 2654435761) mod n]
};

/// y = f(x) over `n` bf16 elements (void* = __nv_bfloat16*), on `stream` (cudaStream_t).
/// Returns the cudaError_t of the launch as an int (0 = success).
int launch_elementwise(ElementwiseMode mode, const void* x, void* y, int64_t n, int64_t row, void* stream);
/// Row-wise softmax of `rows` rows of `cols` bf16 scores, in place; keys j > i (causal)
/// and, when window > 0, j ≤ i − window are masked. The query index of row r is
/// r mod cols (heads stacked as rows).
int launch_softmax(void* scores, int64_t rows, int64_t cols, int64_t window, void* stream);
/// Adam / LAMB update over `n` fp32 parameters (p, g, m, v: float*).
int launch_optimizer(bool lamb, float* p, const float* g, float* m, float* v, int64_t n, void* stream);
/// Fills `n` bf16 elements with a deterministic pattern.
int launch_fill(void* y, int64_t n, float scale, void* stream);

} // namespace twinscale::backend::cuda
