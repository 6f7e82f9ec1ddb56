#include "sim/device_model.hpp"

#include <algorithm>
#include <string>

#include "schedules/calibration.hpp"
#include "schedules/error.hpp"
#include "sim/error.hpp"

namespace twinscale::sim {

using schedules::Kernel;
using schedules::Op;
using schedules::OpKind;
using schedules::Phase;

DeviceModel::DeviceModel(const topology::GpuSpec& gpu, DeviceModelParams params,
                         const schedules::CalibrationTable* calibration)
    : gpu_(gpu), params_(params), calibration_(calibration) {
  if (!(gpu_.peak_flops > 0) || !(gpu_.hbm_bw_bytes_per_s > 0))
    throw SimError("device model: GPU '" + gpu_.model + "' needs peak_flops > 0 and hbm_bw_bytes_per_s > 0");
}

DeviceModelParams DeviceModelParams::from_gpu(const topology::GpuSpec& gpu) {
  const auto& k = gpu.kernels;
  DeviceModelParams p;
  p.sustained_clock_ratio = k.sustained_clock_ratio;
  p.gemm_max_efficiency = k.gemm_max_efficiency;
  p.fp8_gemm_max_efficiency = k.fp8_gemm_max_efficiency;
  p.gemm_half_dim = k.gemm_half_dim;
  p.gemm_tile_m = k.gemm_tile_m;
  p.gemm_tile_n = k.gemm_tile_n;
  p.sms = gpu.sms;
  p.flash = k.flash;
  p.cudnn = k.cudnn;
  p.vector_flop_efficiency = k.vector_flop_efficiency;
  p.hbm_efficiency = k.hbm_efficiency;
  p.kernel_launch_s = k.kernel_launch_s;
  p.op_issue_gap_s = k.op_issue_gap_s;
  return p;
}

double DeviceModelParams::nccl_slowdown(const topology::GpuSpec& gpu, int channels) {
  if (gpu.sms <= 0) return 0;
  const double sms = static_cast<double>(gpu.sms);
  const double used = std::min(sms - 1, channels * gpu.kernels.nccl_sms_per_channel);
  const double hbm = std::min(0.99, gpu.kernels.nccl_hbm_share);
  // Compute-bound kernels lose the SMs, memory-bound ones the HBM share; the event core
  // applies one factor to every kernel, so the larger of the two.
  return std::max(used / (sms - used), hbm / (1 - hbm));
}

std::vector<double> comm_rate_factors(const topology::GpuSpec& gpu, std::optional<double> fixed_slowdown) {
  std::vector<double> f(256, 1.0);
  for (int c = 1; c < 256; ++c)
    f[static_cast<size_t>(c)] =
        1.0 / (1.0 + (fixed_slowdown ? *fixed_slowdown : DeviceModelParams::nccl_slowdown(gpu, c)));
  return f;
}

DeviceModelParams DeviceModelOverrides::apply(DeviceModelParams p) const {
  const auto set = [](double& v, const std::optional<double>& o) {
    if (o) v = *o;
  };
  set(p.sustained_clock_ratio, sustained_clock_ratio);
  set(p.gemm_max_efficiency, gemm_max_efficiency);
  set(p.gemm_half_dim, gemm_half_dim);
  set(p.flash.fwd_efficiency, flash_fwd_efficiency);
  set(p.flash.bwd_efficiency, flash_bwd_efficiency);
  set(p.vector_flop_efficiency, vector_flop_efficiency);
  set(p.hbm_efficiency, hbm_efficiency);
  set(p.kernel_launch_s, kernel_launch_s);
  set(p.op_issue_gap_s, op_issue_gap_s);
  if (wave_quantisation && !*wave_quantisation) p.sms = 0;
  return p;
}

double DeviceModel::wave_efficiency(int64_t m, int64_t n) const {
  if (params_.sms <= 0 || params_.gemm_tile_m <= 0 || params_.gemm_tile_n <= 0 || m <= 0 || n <= 0) return 1.0;
  const int64_t tiles =
      ((m + params_.gemm_tile_m - 1) / params_.gemm_tile_m) * ((n + params_.gemm_tile_n - 1) / params_.gemm_tile_n);
  const int64_t waves = (tiles + params_.sms - 1) / params_.sms;
  return static_cast<double>(tiles) / static_cast<double>(waves * params_.sms);
}

namespace {
/// A fused-attention kernel's fraction of peak over `keys` keys per query: its figure is
/// quoted over 4,096 causal keys and scales by L/(L + keys_half); × unmasked_ratio for a
/// block without a mask.
double attention_rate(const topology::AttentionFigures& f, bool backward, int64_t keys, bool unmasked) {
  double e = backward ? f.bwd_efficiency : f.fwd_efficiency;
  if (f.keys_half > 0 && keys > 0) {
    constexpr double kQuotedKeys = 4096;
    const double l = static_cast<double>(keys);
    e *= (l / (l + f.keys_half)) / (kQuotedKeys / (kQuotedKeys + f.keys_half));
  }
  return unmasked ? e * f.unmasked_ratio : e;
}
} // namespace

double DeviceModel::attention_efficiency(Kernel kernel, bool backward, int64_t keys, bool unmasked) const {
  if (kernel != Kernel::CudnnAttention) return attention_rate(params_.flash, backward, keys, unmasked);
  if (!params_.cudnn.given()) // as the scenario's refusal: both directions' rates or none
    throw SimError("device model: cuDNN's fused attention (schedule.operators.attention_backend = \"cudnn\") on "
                   "GPU '" +
                   gpu_.model +
                   "', whose catalogue entry lacks cudnn_attention_fwd_efficiency or cudnn_attention_bwd_efficiency; "
                   "give both in the cluster's [gpu] table or set attention_backend = \"flash-attn-2\"");
  return attention_rate(params_.cudnn, backward, keys, unmasked);
}

double DeviceModel::gemm_efficiency(int64_t m, int64_t n, int64_t k, schedules::DType dtype) const {
  const bool fp8 = dtype == schedules::DType::FP8 && params_.fp8_gemm_max_efficiency > 0;
  double e = (fp8 ? params_.fp8_gemm_max_efficiency : params_.gemm_max_efficiency) * wave_efficiency(m, n);
  for (int64_t d : {m, n, k}) {
    if (d <= 0) continue; // unknown dimension: no penalty
    const double dd = static_cast<double>(d), h = params_.gemm_half_dim;
    e *= dd * dd / (dd * dd + h * h);
  }
  return e;
}

int DeviceModel::kernel_launches(Kernel kernel, Phase phase) {
  const bool bwd = phase == Phase::Backward;
  switch (kernel) {
  case Kernel::None: return 0;
  // LayerNorm and GeLU: the lowering emits one op per kernel (three unfused LayerNorm
  // passes, bias add and GeLU apart), so each op is one launch.
  case Kernel::AttentionUnfused: return bwd ? 5 : 3; // GEMM, softmax, GEMM (+ grads)
  default: return 1;
  }
}

double DeviceModel::seconds(const Op& op) const {
  TWINSCALE_ASSERT(!op.is_communication(), "device model asked for a communication op");
  if (calibration_ != nullptr) {
    const std::string_view name =
        names_ != nullptr && op.name < names_->size() ? std::string_view((*names_)[op.name]) : std::string_view();
    if (auto s = calibration_->kernel_seconds(op, name)) return *s * params_.compute_time_factor;
  }
  return model_seconds(op) * params_.compute_time_factor;
}

double DeviceModel::tensor_peak(const Op& op) const {
  if (op.dtype != schedules::DType::FP8) return gpu_.peak_flops * params_.sustained_clock_ratio;
  if (!(gpu_.fp8_peak_flops > 0))
    throw SimError("device model: an FP8 GEMM (precision.gemm = \"fp8\") on GPU '" + gpu_.model +
                   "', which has no FP8 tensor cores (no fp8_peak_flops in its catalogue entry); FP8 GEMMs need "
                   "Hopper or later (H100-SXM, H200-SXM, B200, GB200) or precision.gemm = \"bf16\"");
  return gpu_.fp8_peak_flops * params_.sustained_clock_ratio;
}

double DeviceModel::model_seconds(const Op& op) const {
  const double peak = gpu_.peak_flops * params_.sustained_clock_ratio;
  const double hbm = gpu_.hbm_bw_bytes_per_s * params_.hbm_efficiency;
  const double launch = params_.kernel_launch_s * kernel_launches(op.kernel, op.labels.phase);
  switch (op.kernel) {
  case Kernel::Gemm: {
    // One chunk of an overlapped GEMM (shape[3] chunks, run together): the efficiency of
    // the whole GEMM, whose tiles fill the waves; each chunk still pays its launch.
    const int64_t rows = op.shape[3] > 1 ? op.shape[0] * op.shape[3] : op.shape[0];
    const double e = gemm_efficiency(rows, op.shape[1], op.shape[2], op.dtype);
    return std::max(op.flops / (tensor_peak(op) * e), op.bytes / hbm) + launch;
  }
  case Kernel::FlashAttention2:
  case Kernel::CudnnAttention: {
    // A causal mask lets FlashAttention-2 skip the key blocks above the diagonal: about
    // half the FLOPs of dense attention (Dao 2023, §3.1.1; its causal benchmarks count
    // FLOPs the same way). An op with keys per query w = shape[3] > 0 (a sliding window,
    // or a context-parallel ring step's unmasked block) executes s·min(w, s) scores.
    // The backward recomputes the scores: five matmuls to the forward's two, 2.5 × the
    // forward's FLOPs, which is how the FlashAttention-2 paper and its benchmark script
    // (benchmarks/benchmark_flash_attention.py, flops(): 2.5 × for "bwd") count the
    // rates the catalogue's backward efficiencies are quoted from (cuDNN's, from
    // cudnn-frontend's SDPA benchmarks and the FlashAttention-3 paper, count it the same
    // way); the op carries the model FLOPs (2 × forward), so the kernel executes 1.25 × them.
    const bool backward = op.labels.phase == Phase::Backward;
    const double recompute = backward ? 1.25 : 1.0;
    const int64_t seq = op.shape[1];
    const bool windowed = op.shape[3] > 0;
    const int64_t keys = windowed ? std::min(op.shape[3], seq) : seq;
    // a windowed op's FLOPs from its shape (the lowering's s·w for a window, half a block
    // for a ring step); a shape with a zero dimension (a hand-written op): its own FLOPs
    const bool shaped = op.shape[0] > 0 && seq > 0 && op.shape[2] > 0;
    const double windowed_flops = shaped ? (backward ? 8.0 : 4.0) * static_cast<double>(op.shape[0]) *
                                               static_cast<double>(seq) * static_cast<double>(keys) *
                                               static_cast<double>(op.shape[2])
                                         : op.flops;
    const double executed = (windowed ? windowed_flops : 0.5 * op.flops) * recompute;
    return std::max(executed / (peak * attention_efficiency(op.kernel, backward, keys, windowed)), op.bytes / hbm) +
           launch;
  }
  case Kernel::AttentionUnfused: {
    // shape = {batch·heads, seq, head_dim, window}: score GEMM seq × (window|seq) × head_dim,
    // batched over batch·heads, so its tiles are batch·heads times those of one GEMM.
    const int64_t seq = op.shape[1];
    const int64_t cols = op.shape[3] > 0 ? std::min(op.shape[3], seq) : seq;
    // Shape factor of one GEMM; waves over the tiles of the whole batch.
    const double e = gemm_efficiency(seq, cols, op.shape[2]) / wave_efficiency(seq, cols) *
                     wave_efficiency(std::max<int64_t>(1, op.shape[0]) * seq, cols);
    return op.flops / (peak * e) + op.bytes / hbm + launch;
  }
  case Kernel::DataLoad: {
    // The batch's host → device copy crosses PCIe (the GPU's host interface), not HBM.
    const double pcie = gpu_.pcie_bw_bytes_per_s > 0 ? gpu_.pcie_bw_bytes_per_s : hbm;
    return op.bytes / pcie + launch;
  }
  default: {
    const double vec_peak = peak * params_.vector_flop_efficiency;
    return std::max(op.flops / vec_peak, op.bytes / hbm) + launch;
  }
  }
}

} // namespace twinscale::sim
