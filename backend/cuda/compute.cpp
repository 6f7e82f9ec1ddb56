// The CUDA device's compute kernels (compute.hpp).
#include "backend/cuda/compute.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "backend/cuda/fp8_gemm.hpp"
#include "backend/cuda/fp8_kernels.hpp"
#include "backend/cuda/kernels.hpp"
#include "backend/error.hpp"
#include "schedules/error.hpp"

namespace twinscale::backend::cuda {

using schedules::Kernel;
using schedules::Op;
using schedules::OpKind;

namespace {

constexpr float kE4m3Max = 448.0f; // the largest finite E4M3 value (OCP FP8 specification)

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw BackendError(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw BackendError(std::string("cuBLAS: ") + what + " failed with status " + std::to_string(static_cast<int>(s)));
}

size_t round_up(double bytes) { return static_cast<size_t>(std::max(16.0, std::ceil(bytes / 256.0) * 256.0)); }

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

/// Columns of an FP8 cast's tensor of `elements`: the layer's hidden size when it
/// divides them (activations are tokens × hidden), else the largest power of two up to
/// 1,024 that does.
int64_t cast_columns(int64_t elements, int64_t hidden) {
  if (hidden > 0 && elements % hidden == 0) return hidden;
  int64_t c = 1024;
  while (c > 1 && elements % c != 0) c /= 2;
  return c;
}

/// The mode of an FP8 cast op (not a scale update), as schedules/detail/fp8.cpp lowers
/// it: "….fp8_transpose" transposes a gathered FP8 tensor (1 B read, 1 B written per
/// element); any other cast reads BF16 and writes FP8 (3 B per element) and, with its
/// transpose, 4 B.
Fp8CastMode cast_mode(const Op& op, const std::string& name) {
  if (ends_with(name, ".fp8_transpose")) return Fp8CastMode::Transpose;
  return op.bytes >= 3.5 * static_cast<double>(std::max<int64_t>(op.shape[0], 1)) ? Fp8CastMode::CastTranspose
                                                                                  : Fp8CastMode::Cast;
}

} // namespace

/// Device memory of one stream, sized for the largest op issued on it. Memory-bound ops
/// rotate over `sets` copies of their input/output so that, as in training, their data
/// comes from HBM rather than from the L2 cache.
struct ComputeKernels::Arena {
  std::array<size_t, 4> bytes{}; // 0-2 GEMM A B C / attention Q K V, 3 scores
  std::array<void*, 4> ptr{};
  size_t ew_bytes = 0;           // one elementwise input (and one output)
  std::vector<void*> ew_x, ew_y; // rotation sets
  size_t next_set = 0;
  bool fp8 = false; // an FP8 GEMM reads slots 0 and 1 as FP8
  void need(int slot, double b) { bytes[slot] = std::max(bytes[slot], round_up(b)); }
};

GpuInfo current_gpu() {
  GpuInfo g;
  check(cudaGetDevice(&g.index), "cudaGetDevice");
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, g.index), "cudaGetDeviceProperties");
  g.name = p.name;
  g.major = p.major;
  g.minor = p.minor;
  return g;
}

void require_fp8_support(const schedules::Schedule& schedule, const GpuInfo& gpu, int64_t rank) {
  if (gpu.compute_capability() >= 89) return;
  for (const auto& p : schedule.programs)
    for (const Op& op : p.ops)
      if (op.dtype == schedules::DType::FP8 || op.kernel == Kernel::Fp8Cast)
        throw BackendError("--device cuda: job \"" + schedule.job.name +
                           "\" runs FP8 GEMMs ([precision] gemm = \"fp8\"), but rank " + std::to_string(rank) +
                           "'s GPU " + std::to_string(gpu.index) + " (" + gpu.name + ") has compute capability " +
                           std::to_string(gpu.major) + "." + std::to_string(gpu.minor) +
                           "; FP8 tensor cores need 8.9 or newer (Ada, Hopper, Blackwell): run it there, or with "
                           "gemm = \"bf16\"");
}

ComputeKernels::ComputeKernels(const schedules::Schedule& schedule)
    : schedule_(schedule), arenas_(std::make_unique<std::array<Arena, schedules::kStreamCount>>()) {
  hidden_ = std::max<int64_t>(schedule.job.model.hidden / std::max<int64_t>(schedule.layout.tp, 1), 1);
  vocab_ = std::max<int64_t>(schedule.job.model.vocab / std::max<int64_t>(schedule.layout.tp, 1), 1);
}

ComputeKernels::~ComputeKernels() {
  if (leaked_) {
    (void)fp8_gemms_.release();
    return;
  }
  fp8_gemms_.reset();
  for (Arena& a : *arenas_) {
    for (void* p : a.ptr) cudaFree(p);
    for (void* p : a.ew_x) cudaFree(p);
    for (void* p : a.ew_y) cudaFree(p);
  }
  for (float* p : opt_) cudaFree(p);
  for (float* p : history_) cudaFree(p);
  cudaFree(amax_);
  cudaFree(scale_);
  cudaFreeHost(host_batch_);
  if (cublas_) cublasDestroy(cublas_);
}

void ComputeKernels::size_for(const Op& op) {
  Arena& a = (*arenas_)[static_cast<size_t>(op.stream)];
  const auto& sh = op.shape;
  const double bf = 2.0;
  switch (op.kind) {
  case OpKind::Gemm:
    a.need(0, bf * sh[0] * sh[2]);
    a.need(1, bf * sh[2] * sh[1]);
    a.need(2, bf * sh[0] * sh[1]);
    if (op.dtype == schedules::DType::FP8) { // FP8 operands (1 B) and the BF16 output, padded
      a.fp8 = true;
      const auto [m, n, k] = padded_fp8_dims(sh[0], sh[1], sh[2]);
      a.need(0, 1.0 * m * k);
      a.need(1, 1.0 * k * n);
      a.need(2, bf * m * n);
    }
    break;
  case OpKind::Attention:
    for (int k = 0; k < 3; ++k) a.need(k, bf * sh[0] * sh[1] * sh[2]);
    a.need(3, bf * sh[0] * sh[1] * std::max<int64_t>(sh[1], sh[2]));
    break;
  case OpKind::Elementwise:
    if (op.kernel == Kernel::DataLoad) { // the whole batch, as scheduled
      a.ew_bytes = std::max(a.ew_bytes, round_up(std::max(op.bytes, bf * sh[0])));
      host_batch_bytes_ = std::max(host_batch_bytes_, static_cast<size_t>(std::ceil(op.bytes)));
    } else if (op.kernel == Kernel::Fp8Cast && ends_with(schedule_.names[op.name], ".scale_update")) {
      const int64_t tensors = std::max<int64_t>(1, std::llround(op.flops / 4)); // 4 operations per tensor
      fp8_tensors_ = std::max(fp8_tensors_, tensors);
      history_elems_ = std::max(history_elems_, std::max<int64_t>(sh[0], tensors));
    } else {
      a.ew_bytes = std::max(a.ew_bytes, round_up(bf * std::max<int64_t>(sh[0], 1)));
    }
    break;
  case OpKind::OptimizerStep: opt_elems_ = std::max<int64_t>(opt_elems_, sh[0]); break;
  default: TWINSCALE_ASSERT(false, "ComputeKernels::size_for() of a communication op");
  }
}

void ComputeKernels::prepare(const schedules::Program& program, int64_t rank, cudaStream_t fill) {
  require_fp8_support(schedule_, current_gpu(), rank);
  for (const Op& op : program.ops)
    if (!op.is_communication()) size_for(op);
  check(cublasCreate(&cublas_), "cublasCreate");
  int l2 = 0;
  check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0), "cudaDeviceGetAttribute (L2 size)");
  auto alloc = [&](size_t bytes, const char* what) {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), what);
    check(static_cast<cudaError_t>(launch_fill(p, static_cast<int64_t>(bytes / 2), 1.0f, fill)), "fill kernel");
    return p;
  };
  for (Arena& a : *arenas_) {
    for (size_t k = 0; k < a.ptr.size(); ++k)
      if (a.bytes[k]) a.ptr[k] = alloc(a.bytes[k], "cudaMalloc (buffers of the scheduled shapes)");
    if (!a.ew_bytes) continue;
    // Enough sets that one pass over them is twice the L2 (at most 16, at most 2 GiB).
    const double per_set = 2.0 * static_cast<double>(a.ew_bytes);
    const auto sets = static_cast<size_t>(
        std::clamp(std::ceil(2.0 * l2 / per_set), 1.0, std::max(1.0, std::min(16.0, 2147483648.0 / per_set))));
    for (size_t k = 0; k < sets; ++k) {
      a.ew_x.push_back(alloc(a.ew_bytes, "cudaMalloc (elementwise input)"));
      a.ew_y.push_back(alloc(a.ew_bytes, "cudaMalloc (elementwise output)"));
    }
  }
  const size_t opt_bytes = static_cast<size_t>(std::max<int64_t>(opt_elems_, 1)) * sizeof(float);
  for (float*& p : opt_) {
    check(cudaMalloc(reinterpret_cast<void**>(&p), opt_bytes), "cudaMalloc (optimizer)");
    check(cudaMemsetAsync(p, 0, opt_bytes, fill), "cudaMemsetAsync");
  }
  prepare_fp8(program, fill);
  if (host_batch_bytes_ > 0) {
    check(cudaMallocHost(&host_batch_, host_batch_bytes_), "cudaMallocHost (pinned batch)");
    std::fill_n(static_cast<uint8_t*>(host_batch_), host_batch_bytes_, uint8_t{0x3f});
  }
  check(cudaStreamSynchronize(fill), "cudaStreamSynchronize (buffers)");
}

void ComputeKernels::prepare_fp8(const schedules::Program& program, cudaStream_t fill) {
  const bool fp8 = std::any_of(program.ops.begin(), program.ops.end(), [](const Op& op) {
    return op.dtype == schedules::DType::FP8 || op.kernel == Kernel::Fp8Cast;
  });
  if (!fp8) return;
  // At least the two tensors every FP8 GEMM reads (slot 0: activation or gradient,
  // slot 1: weight); scales start at 1 (TE's initial scale), amaxes and histories at 0.
  fp8_tensors_ = std::max<int64_t>(fp8_tensors_, 2);
  history_elems_ = std::max(history_elems_, fp8_tensors_);
  const size_t t = static_cast<size_t>(fp8_tensors_);
  check(cudaMalloc(reinterpret_cast<void**>(&amax_), t * sizeof(float)), "cudaMalloc (FP8 amaxes)");
  check(cudaMalloc(reinterpret_cast<void**>(&scale_), 2 * t * sizeof(float)), "cudaMalloc (FP8 scales)");
  check(cudaMemsetAsync(amax_, 0, t * sizeof(float), fill), "cudaMemsetAsync");
  const std::vector<float> ones(2 * t, 1.0f);
  check(cudaMemcpyAsync(scale_, ones.data(), 2 * t * sizeof(float), cudaMemcpyHostToDevice, fill),
        "cudaMemcpyAsync (FP8 scales)");
  for (float*& h : history_) {
    const size_t bytes = static_cast<size_t>(history_elems_) * sizeof(float);
    check(cudaMalloc(reinterpret_cast<void**>(&h), bytes), "cudaMalloc (FP8 amax history)");
    check(cudaMemsetAsync(h, 0, bytes, fill), "cudaMemsetAsync");
  }
  for (Arena& a : *arenas_)
    for (int slot = 0; slot < 2 && a.fp8; ++slot)
      check(static_cast<cudaError_t>(launch_fp8_fill(a.ptr[slot], static_cast<int64_t>(a.bytes[slot]), fill)),
            "FP8 fill kernel");
  fp8_gemms_ = std::make_unique<Fp8Gemms>();
  check(cudaStreamSynchronize(fill), "cudaStreamSynchronize (FP8 state)"); // `ones` goes out of scope
}

void ComputeKernels::launch(const Op& op, cudaStream_t stream) {
  Arena& a = (*arenas_)[static_cast<size_t>(op.stream)];
  const auto& sh = op.shape;
  const float one = 1.0f, zero = 0.0f;
  switch (op.kind) {
  case OpKind::Gemm: { // row-major C(m×n) = A(m×k)·B(k×n) as column-major Cᵀ = Bᵀ·Aᵀ
    if (op.dtype == schedules::DType::FP8) {
      const float* inv = scale_ + fp8_tensors_; // the inverse scales
      fp8_gemms_->run(sh[0], sh[1], sh[2], op.labels.phase == schedules::Phase::Backward, a.ptr[0], a.ptr[1], a.ptr[2],
                      inv, inv + 1, stream);
      return;
    }
    const int m = static_cast<int>(sh[0]), n = static_cast<int>(sh[1]), k = static_cast<int>(sh[2]);
    check(cublasSetStream(cublas_, stream), "cublasSetStream");
    check(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, a.ptr[1], CUDA_R_16BF, n, a.ptr[0],
                       CUDA_R_16BF, k, &zero, a.ptr[2], CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx (bf16)");
    return;
  }
  case OpKind::Attention: { // per head: S = Q·Kᵀ, softmax (causal, window), O = S·V
    const int bh = static_cast<int>(std::max<int64_t>(sh[0], 1)), s = static_cast<int>(sh[1]),
              d = static_cast<int>(sh[2]);
    const long long sd = static_cast<long long>(s) * d, ss = static_cast<long long>(s) * s;
    check(cublasSetStream(cublas_, stream), "cublasSetStream");
    check(cublasGemmStridedBatchedEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, s, s, d, &one, a.ptr[1], CUDA_R_16BF, d, sd,
                                     a.ptr[0], CUDA_R_16BF, d, sd, &zero, a.ptr[3], CUDA_R_16BF, s, ss, bh,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx (scores)");
    check(static_cast<cudaError_t>(launch_softmax(a.ptr[3], static_cast<int64_t>(bh) * s, s, sh[3], stream)),
          "softmax kernel");
    check(cublasGemmStridedBatchedEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, d, s, s, &one, a.ptr[2], CUDA_R_16BF, d, sd,
                                     a.ptr[3], CUDA_R_16BF, s, ss, &zero, a.ptr[0], CUDA_R_16BF, d, sd, bh,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx (output)");
    return;
  }
  case OpKind::Elementwise:
    if (op.kernel == Kernel::Fp8Cast)
      launch_fp8(op, a, stream);
    else
      launch_elementwise(op, a, stream);
    return;
  case OpKind::OptimizerStep:
    check(static_cast<cudaError_t>(launch_optimizer(op.kernel == Kernel::LambStep, opt_[0], opt_[1], opt_[2], opt_[3],
                                                    std::min<int64_t>(sh[0], opt_elems_), stream)),
          "optimizer kernel");
    return;
  default: TWINSCALE_ASSERT(false, "ComputeKernels::launch() of a communication op");
  }
}

int ComputeKernels::variant(const Op& op) const {
  if (op.kind == OpKind::Gemm && op.dtype == schedules::DType::FP8)
    return op.labels.phase == schedules::Phase::Backward ? 2 : 1;
  if (op.kernel != Kernel::Fp8Cast) return 0;
  const std::string& name = schedule_.names[op.name];
  if (ends_with(name, ".scale_update")) return 3;
  const int gradient = op.labels.phase == schedules::Phase::Backward ? 8 : 0; // E5M2
  return 4 + static_cast<int>(cast_mode(op, name)) + gradient;
}

/// The FP8 casts as schedules/detail/fp8.cpp lowers them: "….scale_update" rolls the amax
/// history and computes the scales; the others by cast_mode. A cast in the backward pass
/// casts a gradient (E5M2); every cast folds its amax into slot 0.
void ComputeKernels::launch_fp8(const Op& op, Arena& a, cudaStream_t stream) {
  const std::string& name = schedule_.names[op.name];
  if (ends_with(name, ".scale_update")) {
    const int64_t tensors = std::max<int64_t>(1, std::llround(op.flops / 4));
    const int64_t len = std::max<int64_t>(1, op.shape[0] / tensors);
    float* from = history_[static_cast<size_t>(history_flip_ % 2)];
    float* to = history_[static_cast<size_t>((history_flip_ + 1) % 2)];
    ++history_flip_;
    check(static_cast<cudaError_t>(launch_fp8_scale_update(from, to, amax_, scale_, scale_ + fp8_tensors_,
                                                           std::min(tensors, fp8_tensors_), len, kE4m3Max, stream)),
          "FP8 scale update kernel");
    return;
  }
  const size_t set = a.next_set++ % a.ew_x.size();
  const int64_t elements = std::max<int64_t>(op.shape[0], 1);
  const int64_t cols = cast_columns(elements, hidden_), rows = elements / cols;
  const Fp8CastMode mode = cast_mode(op, name);
  const bool gradient = op.labels.phase == schedules::Phase::Backward;
  auto* y = static_cast<uint8_t*>(a.ew_y[set]);
  check(static_cast<cudaError_t>(
            launch_fp8_cast(mode, gradient, a.ew_x[set], y, y + elements, rows, cols, scale_, amax_, stream)),
        "FP8 cast kernel");
}

void ComputeKernels::launch_elementwise(const Op& op, Arena& a, cudaStream_t stream) {
  const size_t set = a.next_set++ % a.ew_x.size();
  if (op.kernel == Kernel::DataLoad) {
    check(cudaMemcpyAsync(a.ew_x[set], host_batch_, static_cast<size_t>(std::ceil(op.bytes)), cudaMemcpyHostToDevice,
                          stream),
          "cudaMemcpyAsync (batch, pinned host → device)");
    return;
  }
  ElementwiseMode mode = ElementwiseMode::ResidualAdd;
  int64_t row = hidden_;
  switch (op.kernel) {
  case Kernel::LayerNorm: mode = ElementwiseMode::LayerNormUnfused; break;
  case Kernel::FusedLayerNorm:
  case Kernel::RmsNorm: mode = ElementwiseMode::LayerNorm; break;
  case Kernel::Gelu: mode = ElementwiseMode::Gelu; break;
  case Kernel::FusedBiasGelu: mode = ElementwiseMode::FusedBiasGelu; break;
  case Kernel::Dropout: mode = ElementwiseMode::Dropout; break;
  case Kernel::Embedding: mode = ElementwiseMode::Embedding; break;
  case Kernel::CrossEntropy:
    mode = ElementwiseMode::CrossEntropy;
    row = vocab_;
    break;
  default: break;
  }
  const int64_t n = std::max<int64_t>(op.shape[0], 1);
  check(static_cast<cudaError_t>(cuda::launch_elementwise(mode, a.ew_x[set], a.ew_y[set], n, row, stream)),
        "elementwise kernel");
}

} // namespace twinscale::backend::cuda
