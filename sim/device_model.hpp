// The device model: how long one compute op takes on one GPU, from micro-level facts
// only (hardware.md): peak BF16 FLOP/s and HBM bandwidth of the GpuSpec, achieved
// fractions of those per kernel kind, and a launch overhead per kernel.
//
//   GEMM       t = max(F / (peak · e_gemm(m,n,k)), B / (hbm · e_hbm)) + t_launch
//              e_gemm = e_max · Π_{d∈{m,n,k}} d² / (d² + d_half²): large GEMMs reach e_max
//              (0.85, inside cuBLAS's 70–90 %; every dimension ≥ 1,024 keeps > 99 % of
//              it); a dimension of d_half (96, under one 128-wide tile) halves it, so
//              skinny GEMMs fall well below (m = 32: 0.10 of e_max; m = 8: 0.007).
//   Attention  FlashAttention-2: F / (peak · e_fa) + t_launch, e_fa 0.60 forward (50–70 %),
//              0.45 backward ("less in the backward pass"). Unfused: the two batched
//              GEMMs at e_gemm(seq, seq|window, head_dim) plus the s×s (or s×w) score
//              traffic in B through HBM, and a chain of kernels (3 forward, 5 backward).
//              A sliding window's cost s·w is in the op's F and B (lowering), and its
//              shape[3] = w narrows the score GEMM.
//   Memory-bound (norms, activations, dropout, residual, optimizer, embedding, loss)
//              t = max(F / (peak · e_vec), B / (hbm · e_hbm)) + k · t_launch, k the number
//              of kernels of the form: unfused LayerNorm 4, fused 1; unfused bias+GeLU 2,
//              fused 1 (M7); cross-entropy 3; others 1.
//   NCCL kernels occupy SMs: while a communication op of the rank moves data, compute
//   runs at 1 / (1 + nccl_compute_slowdown) of its speed (one documented parameter:
//   0.08 ≈ 8 ring channels of one CTA on A100's 108 SMs, plus their HBM traffic).
//
// A calibration table (schedules/calibration.hpp, measured by the backend) overrides
// the model for every kernel and shape it contains.
#pragma once

#include <cstdint>

#include "schedules/op.hpp"
#include "topology/cluster.hpp"

namespace twinscale::schedules {
struct CalibrationTable;
}

namespace twinscale::sim {

struct DeviceModelParams {
  double gemm_max_efficiency = 0.85;    // cuBLAS on large BF16 GEMMs: 70–90 % of peak
  double gemm_half_dim = 96;            // a GEMM dimension this small halves efficiency
  double flash_fwd_efficiency = 0.60;   // FlashAttention-2 forward: 50–70 % of peak
  double flash_bwd_efficiency = 0.45;   // backward: less than forward
  double vector_flop_efficiency = 0.25; // FLOPs of memory-bound kernels (never the bound)
  double hbm_efficiency = 0.85;         // achieved fraction of HBM bandwidth (streaming)
  double kernel_launch_s = 4e-6;        // "a few µs" per kernel launch
  double nccl_compute_slowdown = 0.08;  // compute slowdown while NCCL kernels run
};

class DeviceModel {
public:
  DeviceModel(const topology::GpuSpec& gpu, DeviceModelParams params = {},
              const schedules::CalibrationTable* calibration = nullptr);

  /// Seconds `op` (a compute op) takes on an otherwise idle GPU.
  double seconds(const schedules::Op& op) const;
  /// The model's GEMM efficiency (fraction of peak) for shape m×n×k.
  double gemm_efficiency(int64_t m, int64_t n, int64_t k) const;
  /// Kernels launched by a compute op of this kernel kind and phase.
  static int kernel_launches(schedules::Kernel kernel, schedules::Phase phase);

  const topology::GpuSpec& gpu() const { return gpu_; }
  const DeviceModelParams& params() const { return params_; }

private:
  double model_seconds(const schedules::Op& op) const;

  topology::GpuSpec gpu_;
  DeviceModelParams params_;
  const schedules::CalibrationTable* calibration_;
};

} // namespace twinscale::sim
