// The CPU device's compute kernels on real buffers (Eigen, fp32): GEMM, attention as
// GEMM + softmax + GEMM, memory-bound elementwise kernels and optimizer steps. Shapes
// are the scheduled ones divided by CpuDeviceOptions::shape_divisor (scaled_shape()).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "schedules/op.hpp"

namespace twinscale::backend::detail {

/// The shape the CPU device executes for `op`: every non-zero dimension divided by
/// `divisor`, rounded up, at least 1 (attention's window likewise).
std::array<int64_t, 4> scaled_shape(const schedules::Op& op, int64_t divisor);

/// Bytes the CPU device moves for a communication op: Op::bytes / divisor, at least 4.
double scaled_bytes(const schedules::Op& op, int64_t divisor);

/// Runs compute kernels; owns their (reused) buffers. Not thread-safe: one per
/// compute stream.
class CpuKernels {
public:
  /// Largest single buffer, in bytes, a kernel may allocate (guards against running a
  /// full-size preset without a shape divisor).
  explicit CpuKernels(double max_buffer_bytes) : max_buffer_bytes_(max_buffer_bytes) {}
  /// Executes `op` (a compute op) at `shape`. Returns a checksum of its output so the
  /// work cannot be optimised away.
  double run(const schedules::Op& op, const std::array<int64_t, 4>& shape);

private:
  double gemm(const std::array<int64_t, 4>& shape);
  double attention(const std::array<int64_t, 4>& shape);
  double elementwise(schedules::Kernel kernel, const std::array<int64_t, 4>& shape);
  double optimizer_step(schedules::Kernel kernel, const std::array<int64_t, 4>& shape);
  std::vector<float>& buffer(int slot, int64_t elements);
  double max_buffer_bytes_;
  std::map<int, std::vector<float>> buffers_;
};

} // namespace twinscale::backend::detail
