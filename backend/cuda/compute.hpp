// The CUDA device's compute kernels (private to backend/cuda/): one launch per scheduled
// compute op on synthetic tensors of its shape, shared by the device of `run`
// (cuda_device.cpp) and by `probe --device cuda` (cuda_probe.cpp), so that the probe
// measures exactly what a run executes.
//  - GEMMs: BF16 cuBLAS (cublasGemmEx); an op of dtype FP8 runs on cuBLASLt with FP8
//    inputs (fp8_gemm.hpp); attention as strided-batched GEMM + softmax kernel + GEMM;
//  - memory-bound kernels (kernels.cu) on buffers rotated beyond the L2 cache; FP8
//    casts, transposes and the amax-history/scale update (fp8_kernels.cu) on the device's
//    FP8 scaling state;
//  - the optimizer step on fp32 state; the data load as a pinned host → device copy.
// Buffers live in one arena per schedule stream, sized for the largest op issued on it.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "schedules/schedule.hpp"

namespace twinscale::backend::cuda {

class Fp8Gemms;

/// The GPU this process uses, as the probe and the errors name it.
struct GpuInfo {
  std::string name; // cudaDeviceProp::name, e.g. "NVIDIA H200"
  int major = 0, minor = 0;
  int index = 0;
  int compute_capability() const { return major * 10 + minor; }
};
GpuInfo current_gpu();

/// FP8 tensor cores (and cuBLASLt's FP8 matmul) need compute capability 8.9 (Ada,
/// Hopper, Blackwell). Throws BackendError naming the job, the GPU and the requirement
/// when `schedule` has an FP8 op and `gpu` is older; no-op otherwise.
void require_fp8_support(const schedules::Schedule& schedule, const GpuInfo& gpu, int64_t rank);

class ComputeKernels {
public:
  explicit ComputeKernels(const schedules::Schedule& schedule);
  ~ComputeKernels();
  ComputeKernels(const ComputeKernels&) = delete;
  ComputeKernels& operator=(const ComputeKernels&) = delete;

  /// Sizes and allocates the buffers of every compute op of `program` (filled on
  /// `fill`), refusing FP8 ops on a GPU without FP8 (require_fp8_support).
  void prepare(const schedules::Program& program, int64_t rank, cudaStream_t fill);
  /// Enqueues `op` (a compute op) on `stream`. Throws BackendError on a failed launch.
  void launch(const schedules::Op& op, cudaStream_t stream);
  /// Ops of equal kind, kernel and shape launch the same kernels (and cuBLASLt plan)
  /// when their variant is equal too: an FP8 GEMM's direction (E4M3 or E5M2 gradient)
  /// and an FP8 cast's mode. A warm-up launches one op of each.
  int variant(const schedules::Op& op) const;
  /// After a failed run: leave the memory to the process exit (kernels may still be
  /// stuck on it, and cudaFree would wait for them).
  void leak() { leaked_ = true; }

private:
  struct Arena;
  void size_for(const schedules::Op& op);
  void launch_elementwise(const schedules::Op& op, Arena& a, cudaStream_t stream);
  void launch_fp8(const schedules::Op& op, Arena& a, cudaStream_t stream);
  void prepare_fp8(const schedules::Program& program, cudaStream_t fill);

  const schedules::Schedule& schedule_;
  std::unique_ptr<std::array<Arena, schedules::kStreamCount>> arenas_;
  std::unique_ptr<Fp8Gemms> fp8_gemms_;
  std::array<float*, 4> opt_{};
  int64_t opt_elems_ = 0, hidden_ = 1024, vocab_ = 1024;
  // FP8 delayed scaling state: per tensor an amax, a scale and an amax history (two
  // copies: the update rolls one into the other)
  int64_t fp8_tensors_ = 0;
  float* amax_ = nullptr;
  float* scale_ = nullptr; // the scales, then the inverse scales
  std::array<float*, 2> history_{};
  int64_t history_elems_ = 0;
  int64_t history_flip_ = 0;
  void* host_batch_ = nullptr;
  size_t host_batch_bytes_ = 0;
  cublasHandle_t cublas_ = nullptr;
  bool leaked_ = false;
};

} // namespace twinscale::backend::cuda
