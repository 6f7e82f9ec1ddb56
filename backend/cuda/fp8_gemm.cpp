// FP8 GEMMs on cuBLASLt (fp8_gemm.hpp).
#include "backend/cuda/fp8_gemm.hpp"

#include <algorithm>
#include <string>

#include "backend/error.hpp"

namespace twinscale::backend::cuda {

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw BackendError(std::string("cuBLASLt: ") + what + " failed with status " + std::to_string(static_cast<int>(s)));
}

int64_t up16(int64_t x) { return (std::max<int64_t>(x, 1) + 15) / 16 * 16; }

} // namespace

std::array<int64_t, 3> padded_fp8_dims(int64_t m, int64_t n, int64_t k) { return {up16(m), up16(n), up16(k)}; }

Fp8Gemms::Fp8Gemms() { check(cublasLtCreate(&handle_), "cublasLtCreate"); }

Fp8Gemms::~Fp8Gemms() {
  for (auto& [key, p] : plans_) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.desc);
  }
  for (auto& [stream, w] : workspaces_) cudaFree(w);
  if (handle_) cublasLtDestroy(handle_);
}

void* Fp8Gemms::workspace(cudaStream_t stream) {
  void*& w = workspaces_[stream];
  if (!w && cudaMalloc(&w, kWorkspaceBytes) != cudaSuccess) {
    w = nullptr;
    throw BackendError("CUDA: cudaMalloc of the cuBLASLt workspace (32 MiB) failed");
  }
  return w;
}

Fp8Gemms::Plan& Fp8Gemms::plan(int64_t m, int64_t n, int64_t k, bool backward) {
  const auto key = std::make_tuple(m, n, k, backward);
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  // Column-major D (n×m) = op(A_lt)·op(B_lt), op(A_lt) = A_ltᵀ with A_lt the k×n weight
  // operand (lda = k), B_lt the k×m activation operand (ldb = k), "TN" as FP8 requires.
  Plan p;
  check(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t t = CUBLAS_OP_T, nop = CUBLAS_OP_N;
  const int8_t fast = backward ? 0 : 1;
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "set TRANSA");
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &nop, sizeof nop), "set TRANSB");
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast), "set FAST_ACCUM");
  const cudaDataType_t grad = backward ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
  check(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_8F_E4M3, static_cast<uint64_t>(k), static_cast<uint64_t>(n), k),
        "cublasLtMatrixLayoutCreate (weight operand)");
  check(cublasLtMatrixLayoutCreate(&p.b, grad, static_cast<uint64_t>(k), static_cast<uint64_t>(m), k),
        "cublasLtMatrixLayoutCreate (activation operand)");
  check(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_16BF, static_cast<uint64_t>(n), static_cast<uint64_t>(m), n),
        "cublasLtMatrixLayoutCreate (bf16 output)");
  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t ws = kWorkspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s =
      cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.desc);
    throw BackendError("cuBLASLt: no FP8 matmul algorithm for m=" + std::to_string(m) + " n=" + std::to_string(n) +
                       " k=" + std::to_string(k) + (backward ? " (E5M2 × E4M3)" : " (E4M3 × E4M3)") + ", status " +
                       std::to_string(static_cast<int>(s)));
  }
  p.algo = result.algo;
  return plans_.emplace(key, p).first->second;
}

void Fp8Gemms::run(int64_t m, int64_t n, int64_t k, bool backward, const void* a, const void* b, void* c,
                   const float* scale_inv_a, const float* scale_inv_b, cudaStream_t stream) {
  const auto [mp, np, kp] = padded_fp8_dims(m, n, k);
  Plan& p = plan(mp, np, kp, backward);
  // cuBLASLt's scale pointers are dequantisation factors (D = scale_A·scale_B·A·B), the
  // inverse scales of TE's scaling state. A_lt is the weight operand (b), B_lt the
  // activation or gradient (a).
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_inv_b, sizeof scale_inv_b),
        "set A_SCALE_POINTER");
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_inv_a, sizeof scale_inv_a),
        "set B_SCALE_POINTER");
  const float one = 1.0f, zero = 0.0f;
  check(cublasLtMatmul(handle_, p.desc, &one, b, p.a, a, p.b, &zero, c, p.c, c, p.c, &p.algo, workspace(stream),
                       kWorkspaceBytes, stream),
        "cublasLtMatmul (fp8)");
}

} // namespace twinscale::backend::cuda
