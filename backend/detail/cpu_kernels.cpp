#include "backend/detail/cpu_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <Eigen/Dense>

#include "backend/error.hpp"
#include "schedules/calibration.hpp"
#include "schedules/error.hpp"

namespace twinscale::backend::detail {

using schedules::Kernel;
using schedules::OpKind;
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<Matrix>;
using Vector = Eigen::Map<Eigen::VectorXf>;

// The rule lives with the calibration table, which the simulator reads under it.
std::array<int64_t, 4> scaled_shape(const schedules::Op& op, int64_t divisor) {
  return schedules::executed_shape(op, divisor);
}

double scaled_bytes(const schedules::Op& op, int64_t divisor) { return schedules::executed_bytes(op.bytes, divisor); }

std::vector<float>& CpuKernels::buffer(int slot, int64_t elements) {
  elements = std::max<int64_t>(elements, 1);
  if (static_cast<double>(elements) * sizeof(float) > max_buffer_bytes_)
    throw BackendError("CPU device: a kernel needs a buffer of " +
                       std::to_string(static_cast<double>(elements) * sizeof(float) / 1e6) +
                       " MB, above the limit of " + std::to_string(max_buffer_bytes_ / 1e6) +
                       " MB; pass a larger --shape-divisor to scale the schedule's shapes down");
  std::vector<float>& b = buffers_[slot];
  if (static_cast<int64_t>(b.size()) < elements) {
    const size_t old = b.size();
    b.resize(static_cast<size_t>(elements));
    for (size_t i = old; i < b.size(); ++i) // deterministic, bounded synthetic data
      b[i] = 0.001f * static_cast<float>((i * 2654435761u + static_cast<size_t>(slot)) % 1000) - 0.5f;
  }
  return b;
}

double CpuKernels::run(const schedules::Op& op, const std::array<int64_t, 4>& shape) {
#if defined(__SSE__)
  // Denormals flushed to zero (FTZ) and read as zero (DAZ) on this thread: a kernel's
  // speed must not depend on the synthetic values earlier kernels left in the shared
  // buffers (softmax underflow made a later GEMM 10× slower in probe repetitions).
  _mm_setcsr(_mm_getcsr() | 0x8040);
#endif
  switch (op.kind) {
  case OpKind::Gemm: return gemm(shape);
  case OpKind::Attention: return attention(shape);
  case OpKind::Elementwise: return elementwise(op.kernel, shape);
  case OpKind::OptimizerStep: return optimizer_step(op.kernel, shape);
  default: TWINSCALE_ASSERT(false, "CpuKernels::run called with a communication op");
  }
}

double CpuKernels::gemm(const std::array<int64_t, 4>& shape) {
  const int64_t m = shape[0], n = shape[1], k = shape[2];
  MatrixMap a(buffer(0, m * k).data(), m, k);
  MatrixMap b(buffer(1, k * n).data(), k, n);
  MatrixMap c(buffer(2, m * n).data(), m, n);
  c.noalias() = a * b;
  return static_cast<double>(c(0, 0));
}

double CpuKernels::attention(const std::array<int64_t, 4>& shape) {
  // {batch·heads, seq, head_dim, window}: per head S = Q·Kᵀ/√d, row softmax (keys
  // outside a sliding window masked), O = P·V — the unfused form, materialising S.
  const int64_t heads = shape[0], s = std::max<int64_t>(shape[1], 1), d = std::max<int64_t>(shape[2], 1);
  const int64_t window = shape[3];
  MatrixMap q(buffer(0, s * d).data(), s, d);
  MatrixMap kk(buffer(1, s * d).data(), s, d);
  MatrixMap v(buffer(2, s * d).data(), s, d);
  MatrixMap scores(buffer(3, s * s).data(), s, s);
  MatrixMap out(buffer(4, s * d).data(), s, d);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  double sum = 0;
  for (int64_t h = 0; h < std::max<int64_t>(heads, 1); ++h) {
    scores.noalias() = (q * kk.transpose()) * scale;
    for (int64_t i = 0; i < s; ++i) {
      const int64_t lo = window > 0 ? std::max<int64_t>(0, i - window + 1) : 0;
      auto row = scores.row(i);
      for (int64_t j = 0; j < lo; ++j) row(j) = -INFINITY;
      for (int64_t j = i + 1; j < s; ++j) row(j) = -INFINITY; // causal
      const float mx = row.segment(lo, i - lo + 1).maxCoeff();
      row = (row.array() - mx).exp();
      row /= row.sum();
    }
    out.noalias() = scores * v;
    sum += out(0, 0);
  }
  return sum;
}

double CpuKernels::elementwise(Kernel kernel, const std::array<int64_t, 4>& shape) {
  const int64_t n = std::max<int64_t>(shape[0], 1);
  Vector x(buffer(0, n).data(), n);
  Vector y(buffer(1, n).data(), n);
  switch (kernel) {
  case Kernel::LayerNorm: // unfused: mean, variance and normalise as three passes
  case Kernel::FusedLayerNorm: {
    const int64_t row = std::min<int64_t>(n, 1024);
    for (int64_t off = 0; off < n; off += row) {
      const int64_t len = std::min(row, n - off);
      auto xs = x.segment(off, len);
      const float mean = xs.mean();
      const float var = (xs.array() - mean).square().mean();
      y.segment(off, len) = (xs.array() - mean) / std::sqrt(var + 1e-5f);
      if (kernel == Kernel::LayerNorm) // the unfused form's separate affine pass
        y.segment(off, len) = y.segment(off, len).array() * 1.01f + 0.01f;
    }
    break;
  }
  case Kernel::RmsNorm: { // x / √(mean x² + ε) per row of 1024
    const int64_t row = std::min<int64_t>(n, 1024);
    for (int64_t off = 0; off < n; off += row) {
      const int64_t len = std::min(row, n - off);
      auto xs = x.segment(off, len);
      y.segment(off, len) = xs / std::sqrt(xs.squaredNorm() / static_cast<float>(len) + 1e-5f);
    }
    break;
  }
  case Kernel::MoeRouting: { // {tokens, experts, top_k}: row softmax, then the top-k probabilities summed
    const int64_t experts = std::clamp<int64_t>(shape[1], 1, n);
    const int64_t k = std::clamp<int64_t>(shape[2], 1, experts);
    float picked = 0;
    for (int64_t off = 0; off + experts <= n; off += experts) {
      auto xs = x.segment(off, experts);
      auto p = y.segment(off, experts);
      p = (xs.array() - xs.maxCoeff()).exp();
      p /= p.sum();
      std::vector<float> row(p.data(), p.data() + experts);
      std::partial_sort(row.begin(), row.begin() + k, row.end(), std::greater<float>());
      for (int64_t j = 0; j < k; ++j) picked += row[static_cast<size_t>(j)];
    }
    y[0] = picked;
    break;
  }
  case Kernel::MoePermute: { // a gather: row i of 64 elements read from a strided source row
    const int64_t row = std::min<int64_t>(n, 64);
    const int64_t rows = n / row;
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t src = (i * 7919) % rows;
      y.segment(i * row, row) = x.segment(src * row, row);
    }
    break;
  }
  case Kernel::Fp8Cast: { // amax, then x·(448/amax) rounded to E4M3's 3 mantissa bits, kept in fp32
    // The CPU device computes in fp32: an FP8 GEMM runs as an fp32 GEMM of its shape, and
    // this kernel does the cast's work (amax reduction, scaling, rounding) on fp32 values.
    const float amax = std::max(x.cwiseAbs().maxCoeff(), 1e-12f);
    const float scale = 448.0f / amax; // E4M3's largest finite value
    for (int64_t i = 0; i < n; ++i) {
      int e = 0;
      const float m = std::frexp(x[i] * scale, &e); // |m| in [0.5, 1): 4 significant bits
      y[i] = std::ldexp(std::round(m * 16.0f) / 16.0f, e);
    }
    break;
  }
  case Kernel::Gelu: // unfused: bias add, then GeLU (two passes)
    y = x.array() + 0.1f;
    y = 0.5f * y.array() * (1.0f + (0.7978845608f * (y.array() + 0.044715f * y.array().cube())).tanh());
    break;
  case Kernel::FusedBiasGelu: {
    auto b = x.array() + 0.1f;
    y = 0.5f * b * (1.0f + (0.7978845608f * (b + 0.044715f * b.cube())).tanh());
    break;
  }
  case Kernel::Dropout:
    for (int64_t i = 0; i < n; ++i) y[i] = ((i * 2654435761u) >> 7) % 10 == 0 ? 0.0f : x[i] / 0.9f;
    break;
  case Kernel::DataLoad: // host → device copy of the batch (a second buffer)
    std::copy(x.data(), x.data() + n, y.data());
    break;
  case Kernel::CrossEntropy: {
    const int64_t row = std::min<int64_t>(n, 1024);
    float loss = 0;
    for (int64_t off = 0; off < n; off += row) {
      const int64_t len = std::min(row, n - off);
      auto xs = x.segment(off, len);
      const float mx = xs.maxCoeff();
      loss += mx + std::log((xs.array() - mx).exp().sum()) - xs[0];
    }
    y[0] = loss;
    break;
  }
  default: // residual add, embedding and anything else: y = x + y
    y += x;
    break;
  }
  return static_cast<double>(y[0]);
}

double CpuKernels::optimizer_step(Kernel kernel, const std::array<int64_t, 4>& shape) {
  const int64_t n = std::max<int64_t>(shape[0], 1);
  Vector p(buffer(0, n).data(), n), g(buffer(1, n).data(), n);
  Vector m(buffer(2, n).data(), n), v(buffer(3, n).data(), n);
  const float lr = 1e-4f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f;
  m = b1 * m + (1 - b1) * g;
  v = b2 * v + (1 - b2) * g.cwiseProduct(g);
  auto update = (m.array() / (v.array().abs().sqrt() + eps)).matrix();
  if (kernel == Kernel::LambStep) { // layer-wise trust ratio ‖p‖ / ‖update‖
    const float un = update.norm();
    const float trust = un > 0 ? p.norm() / un : 1.0f;
    p -= lr * trust * update;
  } else {
    p -= lr * update;
  }
  return static_cast<double>(p[0]);
}

} // namespace twinscale::backend::detail
