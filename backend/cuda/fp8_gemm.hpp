// FP8 GEMMs of the CUDA device on cuBLASLt (private to backend/cuda/), as Transformer
// Engine runs them under delayed scaling: FP8 inputs with per-tensor scale pointers
// (the inverse scales, device floats written by the scale update), BF16 output, FP32
// accumulation.
//  - Operand types: E4M3 × E4M3 forward; a backward GEMM takes the gradient in E5M2
//    (TE's HYBRID format: E4M3 forward, E5M2 gradients) — cuBLASLt has no E5M2 × E5M2.
//  - Fast accumulation forward, split accumulation backward (TE module/base.py:
//    _2X_ACC_FPROP = False, _2X_ACC_DGRAD = _2X_ACC_WGRAD = True).
//  - cuBLASLt's FP8 matmul takes only the "TN" form (A transposed) and 16-byte aligned
//    leading dimensions: C(m×n) = A(m×k)·B(k×n) row-major is computed as column-major
//    Cᵀ = Bᵀ·Aᵀ with both FP8 operands stored k-major, and m, n, k are padded up to a
//    multiple of 16 (padded_fp8_dims; a schedule's real shapes already are).
// One plan (descriptors, heuristic algorithm) per shape and operand types, made at the
// first call (the device's warm-up) and reused; a 32 MiB workspace per stream (cuBLAS's
// recommendation for Hopper).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <tuple>

#include <cublasLt.h>
#include <cuda_runtime.h>

namespace twinscale::backend::cuda {

/// {m, n, k} rounded up to multiples of 16.
std::array<int64_t, 3> padded_fp8_dims(int64_t m, int64_t n, int64_t k);

class Fp8Gemms {
public:
  Fp8Gemms();
  ~Fp8Gemms();
  Fp8Gemms(const Fp8Gemms&) = delete;
  Fp8Gemms& operator=(const Fp8Gemms&) = delete;

  /// c (BF16, m×n padded) = a (m×k) · b (k×n), FP8 operands of padded_fp8_dims; `a`
  /// (the activation or output gradient) is E5M2 when `backward`, `b` E4M3; the inverse
  /// scales (device floats) dequantise them. Throws
  /// BackendError when cuBLASLt has no algorithm or the launch fails.
  void run(int64_t m, int64_t n, int64_t k, bool backward, const void* a, const void* b, void* c,
           const float* scale_inv_a, const float* scale_inv_b, cudaStream_t stream);

private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  Plan& plan(int64_t m, int64_t n, int64_t k, bool backward);
  void* workspace(cudaStream_t stream);

  cublasLtHandle_t handle_ = nullptr;
  std::map<std::tuple<int64_t, int64_t, int64_t, bool>, Plan> plans_;
  std::map<cudaStream_t, void*> workspaces_;
};

} // namespace twinscale::backend::cuda
