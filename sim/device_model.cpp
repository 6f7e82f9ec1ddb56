#include "sim/device_model.hpp"

#include <algorithm>
#include <string>

#include "schedules/error.hpp"
#include "sim/error.hpp"
#include "schedules/calibration.hpp"

namespace twinscale::sim {

using schedules::Kernel;
using schedules::Op;
using schedules::OpKind;
using schedules::Phase;

DeviceModel::DeviceModel(const topology::GpuSpec& gpu, DeviceModelParams params,
                         const schedules::CalibrationTable* calibration)
    : gpu_(gpu), params_(params), calibration_(calibration) {
  if (!(gpu_.peak_flops > 0) || !(gpu_.hbm_bw_bytes_per_s > 0))
    throw SimError("device model: GPU '" + gpu_.model +
                                "' needs peak_flops > 0 and hbm_bw_bytes_per_s > 0");
}

double DeviceModel::gemm_efficiency(int64_t m, int64_t n, int64_t k) const {
  double e = params_.gemm_max_efficiency;
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
  case Kernel::LayerNorm: return 4;         // mean, variance, normalise, scale+shift
  case Kernel::Gelu: return 2;              // bias add, GeLU
  case Kernel::AttentionUnfused: return bwd ? 5 : 3; // GEMM, softmax, GEMM (+ grads)
  case Kernel::CrossEntropy: return 3;      // max, sum of exponentials, loss
  default: return 1;
  }
}

double DeviceModel::seconds(const Op& op) const {
  TWINSCALE_ASSERT(!op.is_communication(), "device model asked for a communication op");
  if (calibration_ != nullptr) {
    if (const auto* k = calibration_->find_kernel(op.kernel, op.dtype, op.shape)) return k->seconds;
  }
  return model_seconds(op);
}

double DeviceModel::model_seconds(const Op& op) const {
  const double peak = gpu_.peak_flops;
  const double hbm = gpu_.hbm_bw_bytes_per_s * params_.hbm_efficiency;
  const double launch = params_.kernel_launch_s * kernel_launches(op.kernel, op.labels.phase);
  switch (op.kernel) {
  case Kernel::Gemm: {
    const double e = gemm_efficiency(op.shape[0], op.shape[1], op.shape[2]);
    return std::max(op.flops / (peak * e), op.bytes / hbm) + launch;
  }
  case Kernel::FlashAttention2: {
    const double e = op.labels.phase == Phase::Backward ? params_.flash_bwd_efficiency
                                                         : params_.flash_fwd_efficiency;
    return std::max(op.flops / (peak * e), op.bytes / hbm) + launch;
  }
  case Kernel::AttentionUnfused: {
    // shape = {batch·heads, seq, head_dim, window}: score GEMM seq × (window|seq) × head_dim.
    const int64_t seq = op.shape[1];
    const int64_t cols = op.shape[3] > 0 ? std::min(op.shape[3], seq) : seq;
    const double e = gemm_efficiency(seq, cols, op.shape[2]);
    return op.flops / (peak * e) + op.bytes / hbm + launch;
  }
  default: {
    const double vec_peak = peak * params_.vector_flop_efficiency;
    return std::max(op.flops / vec_peak, op.bytes / hbm) + launch;
  }
  }
}

} // namespace twinscale::sim
