// The device model: how long one compute op takes on one GPU, from micro-level facts
// only, all read from the GPU's entry of the hardware catalogue (presets/hardware/
// gpus.toml, with sources): peak BF16 FLOP/s at the sustained tensor clock, HBM
// bandwidth, achieved fractions of those per kernel kind, and a launch cost per kernel.
//
//   GEMM       t = max(F / (peak · r_clock · e_gemm(m,n,k)), B / (hbm · e_hbm)) + t_launch
//              (an FP8 GEMM, Op::dtype = FP8: peak = the GPU's fp8_peak_flops, and e_max its
//              fp8_gemm_max_efficiency where the catalogue gives one)
//              e_gemm = e_max · w(m,n) · Π_{d∈{m,n,k}} d² / (d² + d_half²): large GEMMs
//              reach e_max (every dimension ≥ 1,024 keeps > 99 % of the product); a
//              dimension of d_half halves it, so skinny GEMMs fall well below.
//              w = tiles / (⌈tiles / SMs⌉ · SMs), tiles = ⌈m/tile_m⌉·⌈n/tile_n⌉: wave
//              quantisation (NVIDIA "Matrix Multiplication Background" guide §3.2). A
//              chunk of an overlapped GEMM (shape[3] = chunks > 1) counts the tiles of
//              all chunks (m·chunks rows): the chunks run fused or on several streams.
//   Attention  FlashAttention-2: F_exec / (peak · e_fa) + t_launch. A causal op (shape[3] =
//              0) executes F_exec = F / 2 (the mask skips the blocks above the diagonal);
//              an op with keys per query w = shape[3] > 0 (a sliding window, or a
//              context-parallel ring step's unmasked block) executes 4·(b·heads)·s·min(w, s)·d
//              (its shape: the window's s·w, half a block for a ring step). e_fa forward
//              and backward from the catalogue (FlashAttention-2 benchmarks, quoted for a
//              causal kernel over 4,096 keys) × L/(L + L½) ÷ 4,096/(4,096 + L½) with L the
//              keys per query (s for a causal op, min(w, s) otherwise) and L½ =
//              flash_keys_half (0: no length dependence), × flash_unmasked_ratio for a
//              windowed op (a ring step's block has no mask; a band's tiles are unmasked
//              but for its two edges). cuDNN's fused attention (Kernel::CudnnAttention) the
//              same, with its own figures (cudnn_attention_*).
//              Unfused: the two batched
//              GEMMs at e_gemm(seq, seq|window, head_dim) plus the s×s (or s×w) score
//              traffic in B through HBM, and a chain of kernels (3 forward, 5 backward).
//              A sliding window's cost s·w is in the op's F and B (lowering), and its
//              shape[3] = w narrows the score GEMM.
//   Memory-bound (norms, activations, dropout, residual, optimizer, embedding, loss, FP8 casts)
//              t = max(F / (peak · e_vec), B / (hbm · e_hbm)) + k · t_launch, k = 1 per
//              lowered op (the lowering emits one op per kernel: three LayerNorm passes
//              unfused, one fused; the cross-entropy passes apart).
//   Data load  t = B / pcie + t_launch: the batch's host → device copy (GPU's PCIe figure).
//   NCCL kernels occupy SMs: while communication ops of the rank move data, compute
//   runs at 1 / (1 + slowdown) of its speed, slowdown = max(used / (SMs − used),
//   h / (1 − h)) with used = the running ops' CTAs · nccl_sms_per_channel and h =
//   nccl_hbm_share (DeviceModelParams::nccl_slowdown, comm_rate_factors). A
//   data-parallel collective runs the CTAs NCCL plans for its group
//   (nccl_collective_ctas: 16 for all 8 GPUs of DGX A100 servers), the other ops the
//   channels asked for (sim/detail/collective_ctas.cpp).
//
// A calibration table (schedules/calibration.hpp, measured by the backend) overrides
// the model for every kernel and shape it contains.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schedules/op.hpp"
#include "topology/cluster.hpp"

namespace twinscale::schedules {
struct CalibrationTable;
}

namespace twinscale::sim {

/// The device model's figures. Every value comes from the GPU's entry in the hardware
/// catalogue (presets/hardware/gpus.toml, each with its source) through from_gpu();
/// DeviceModelOverrides replaces single figures (tests, what-ifs, calibration).
struct DeviceModelParams {
  double sustained_clock_ratio = 1;   // tensor clock under the power limit / boost clock
  double gemm_max_efficiency = 0;     // large GEMM filling whole waves, fraction of peak
  double fp8_gemm_max_efficiency = 0; // the same for FP8 GEMMs, of the FP8 peak (0: gemm_max_efficiency)
  double gemm_half_dim = 0;           // a GEMM dimension this small halves efficiency
  int64_t gemm_tile_m = 0;            // thread-block output tile: waves over the SMs
  int64_t gemm_tile_n = 0;
  int64_t sms = 0;                   // streaming multiprocessors (0: no wave quantisation)
  topology::AttentionFigures flash;  // FlashAttention-2
  topology::AttentionFigures cudnn;  // cuDNN's fused attention
  double vector_flop_efficiency = 0; // FLOPs of memory-bound kernels (never the bound)
  double hbm_efficiency = 0;         // achieved fraction of HBM bandwidth (streaming)
  double kernel_launch_s = 0;        // per kernel launch
  double op_issue_gap_s = 0;         // idle stream time before each compute op (host hand-off)
  double compute_time_factor = 1;    // every compute op's time × this (speed variation:
                                     // the slowest GPU of the job, sim/speed_variation.hpp)

  /// The figures of `gpu`'s catalogue entry (the slowdown beside communication kernels
  /// is comm_rate_factors').
  static DeviceModelParams from_gpu(const topology::GpuSpec& gpu);
  /// Compute slowdown while communication kernels run: their channels take
  /// channels · sms_per_channel of the SMs, so compute-bound kernels run on the rest,
  /// t' = t · sms / (sms − used) ⇒ slowdown = used / (sms − used); memory-bound kernels
  /// lose the HBM share h the copies take, h / (1 − h); the larger of the two applies.
  static double nccl_slowdown(const topology::GpuSpec& gpu, int channels);
};

/// A GPU's compute rate while communication kernels of c CTAs in all run on it, for c =
/// 0 … 255: 1 / (1 + nccl_slowdown(gpu, c)), or 1 / (1 + fixed_slowdown) for every c > 0
/// when that is given (a what-if or test). What SimOptions::comm_rate_factors holds.
std::vector<double> comm_rate_factors(const topology::GpuSpec& gpu, std::optional<double> fixed_slowdown);

/// Single figures replacing the catalogue's (unset: the catalogue value).
struct DeviceModelOverrides {
  std::optional<double> sustained_clock_ratio, gemm_max_efficiency, gemm_half_dim, flash_fwd_efficiency,
      flash_bwd_efficiency, vector_flop_efficiency, hbm_efficiency, kernel_launch_s, op_issue_gap_s,
      nccl_compute_slowdown;             // read by comm_rate_factors, not apply()
  std::optional<bool> wave_quantisation; // false: ignore the SM count
  DeviceModelParams apply(DeviceModelParams p) const;
};

class DeviceModel {
public:
  DeviceModel(const topology::GpuSpec& gpu, DeviceModelParams params,
              const schedules::CalibrationTable* calibration = nullptr);

  /// Seconds `op` (a compute op) takes on an otherwise idle GPU.
  double seconds(const schedules::Op& op) const;
  /// The model's GEMM efficiency (fraction of the datatype's peak) for shape m×n×k: e_max
  /// is the catalogue's FP8 fraction for an FP8 GEMM where it has one, else the BF16 one.
  double gemm_efficiency(int64_t m, int64_t n, int64_t k, schedules::DType dtype = schedules::DType::BF16) const;
  /// Fraction of the SMs' wave slots a GEMM's output tiles fill (1 = whole waves).
  double wave_efficiency(int64_t m, int64_t n) const;
  /// A fused-attention kernel's (FlashAttention2 or CudnnAttention, each with its own
  /// catalogue figures) achieved fraction of peak over `keys` keys per query (the figure is
  /// quoted over 4,096: keys_half scales it), × the unmasked ratio for a block without a
  /// causal mask; a GPU without cuDNN figures refuses CudnnAttention.
  double attention_efficiency(schedules::Kernel kernel, bool backward, int64_t keys, bool unmasked) const;
  /// Kernels launched by a compute op of this kernel kind and phase.
  static int kernel_launches(schedules::Kernel kernel, schedules::Phase phase);

  const topology::GpuSpec& gpu() const { return gpu_; }
  /// The schedule's op names (Op::name indexes it): calibration entries are per op name.
  void set_op_names(const std::vector<std::string>* names) { names_ = names; }
  const DeviceModelParams& params() const { return params_; }
  /// Whether a calibration table answers for some ops (by name): seconds() then depends
  /// on the op's name as well as on its kernel, datatype, phase, shape, FLOPs and bytes.
  bool calibrated() const { return calibration_ != nullptr; }

private:
  double model_seconds(const schedules::Op& op) const;
  /// Tensor-core peak for a GEMM's datatype (FP8: fp8_peak_flops; SimError if the GPU has none).
  double tensor_peak(const schedules::Op& op) const;

  topology::GpuSpec gpu_;
  DeviceModelParams params_;
  const schedules::CalibrationTable* calibration_;
  const std::vector<std::string>* names_ = nullptr;
};

} // namespace twinscale::sim
