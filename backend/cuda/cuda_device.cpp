#include "backend/cuda/cuda_device.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "backend/cuda/kernels.hpp"
#include "backend/error.hpp"
#include "backend/executor.hpp"
#include "schedules/error.hpp"

namespace twinscale::backend {

using schedules::GroupKind;
using schedules::Kernel;
using schedules::Op;
using schedules::OpKind;

namespace {

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw BackendError(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw BackendError(std::string("cuBLAS: ") + what + " failed with status " + std::to_string(static_cast<int>(s)));
}

/// Waits (bounded) until a non-blocking communicator has finished its last call.
void wait_nccl(ncclComm_t comm, ncclResult_t started, double timeout_s, const std::string& what) {
  ncclResult_t state = started;
  const double deadline = steady_s() + timeout_s;
  while (state == ncclInProgress) {
    if (steady_s() > deadline) {
      ncclCommAbort(comm);
      throw BackendError("NCCL: " + what + " did not finish within the timeout of " + std::to_string(timeout_s) +
                         " s; communicator aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) break;
  }
  if (state != ncclSuccess)
    throw BackendError("NCCL: " + what + ": " + ncclGetErrorString(state));
}

int64_t local_rank(int64_t rank) {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "LOCAL_RANK"})
    if (const char* s = std::getenv(v)) return std::atoll(s);
  return rank;
}

/// Device memory of one stream, sized for the largest op issued on it.
struct Arena {
  std::array<size_t, 8> bytes{};   // slots: 0-2 GEMM A B C / attention Q K V, 3 scores/out,
  std::array<void*, 8> ptr{};      // 4 elementwise x, 5 y, 6 comm send, 7 comm recv
  void need(int slot, double b) { bytes[slot] = std::max(bytes[slot], static_cast<size_t>(std::max(b, 16.0))); }
};

class CudaDevice final : public Device {
public:
  CudaDevice(const schedules::Schedule& schedule, int64_t rank, std::array<ncclComm_t, 5> comms, double epoch,
             double timeout_s)
      : schedule_(schedule), rank_(rank), comms_(comms), epoch_(epoch), timeout_s_(timeout_s) {}

  ~CudaDevice() override {
    if (!aborted_) {
      cudaDeviceSynchronize();
      for (ncclComm_t c : comms_)
        if (c) {
          const ncclResult_t r = ncclCommFinalize(c);
          try {
            wait_nccl(c, r, timeout_s_, "communicator finalisation");
            ncclCommDestroy(c);
          } catch (const BackendError&) {  // already aborted by wait_nccl
          }
        }
    }
    for (cudaEvent_t e : start_) cudaEventDestroy(e);
    for (cudaEvent_t e : end_) cudaEventDestroy(e);
    if (base_) cudaEventDestroy(base_);
    for (Arena& a : arenas_)
      for (void* p : a.ptr)
        if (p) cudaFree(p);
    for (float* p : opt_) if (p) cudaFree(p);
    if (host_batch_) cudaFreeHost(host_batch_);
    if (cublas_) cublasDestroy(cublas_);
    if (!aborted_)
      for (cudaStream_t s : streams_) if (s) cudaStreamDestroy(s);
  }

  std::string_view name() const override { return "cuda"; }
  bool orders_on_device() const override { return true; }
  double now_s() const override { return steady_s() - epoch_; }

  void prepare(const schedules::Schedule& s, int64_t rank) override {
    program_ = &s.program(rank);
    const size_t n = program_->ops.size();
    int least = 0, greatest = 0;
    check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
    for (int st = 0; st < schedules::kStreamCount; ++st) {
      const auto kind = static_cast<schedules::Stream>(st);
      // Communication the computation waits for first runs first (M4/M6 priorities).
      const int prio = kind == schedules::Stream::Compute || kind == schedules::Stream::Data ? least
                       : kind == schedules::Stream::DpComm                                  ? (least + greatest) / 2
                                                                                             : greatest;
      check(cudaStreamCreateWithPriority(&streams_[st], cudaStreamNonBlocking, prio), "cudaStreamCreateWithPriority");
    }
    check(cublasCreate(&cublas_), "cublasCreate");
    double opt_elems = 0, host_bytes = 0;
    for (const Op& op : program_->ops) {
      Arena& a = arenas_[static_cast<size_t>(op.stream)];
      const auto& sh = op.shape;
      const double bf = 2.0;
      switch (op.kind) {
      case OpKind::Gemm:
        a.need(0, bf * sh[0] * sh[2]);
        a.need(1, bf * sh[2] * sh[1]);
        a.need(2, bf * sh[0] * sh[1]);
        break;
      case OpKind::Attention:
        for (int k = 0; k < 3; ++k) a.need(k, bf * sh[0] * sh[1] * sh[2]);
        a.need(3, bf * sh[0] * sh[1] * std::max<int64_t>(sh[1], sh[2]));
        break;
      case OpKind::Elementwise:
        a.need(4, bf * sh[0]);
        a.need(5, bf * sh[0]);
        if (op.kernel == Kernel::DataLoad) host_bytes = std::max(host_bytes, op.bytes);
        break;
      case OpKind::OptimizerStep: opt_elems = std::max(opt_elems, static_cast<double>(sh[0])); break;
      default:
        a.need(6, op.bytes);
        a.need(7, op.bytes);
        break;
      }
    }
    for (size_t st = 0; st < arenas_.size(); ++st)
      for (size_t k = 0; k < 8; ++k) {
        Arena& a = arenas_[st];
        if (!a.bytes[k]) continue;
        check(cudaMalloc(&a.ptr[k], a.bytes[k]), "cudaMalloc (buffers of the scheduled shapes)");
        cuda::launch_fill(a.ptr[k], static_cast<int64_t>(a.bytes[k] / 2), 1.0f, streams_[st]);
      }
    for (float*& p : opt_) {
      check(cudaMalloc(reinterpret_cast<void**>(&p), static_cast<size_t>(std::max(opt_elems, 1.0)) * sizeof(float)),
            "cudaMalloc (optimizer)");
      check(cudaMemsetAsync(p, 0, static_cast<size_t>(std::max(opt_elems, 1.0)) * sizeof(float), streams_[0]),
            "cudaMemsetAsync");
    }
    opt_elems_ = static_cast<int64_t>(opt_elems);
    if (host_bytes > 0) check(cudaMallocHost(&host_batch_, static_cast<size_t>(host_bytes)), "cudaMallocHost (pinned batch)");
    start_.resize(n);
    end_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      check(cudaEventCreate(&start_[i]), "cudaEventCreate");
      check(cudaEventCreate(&end_[i]), "cudaEventCreate");
    }
    failed_.assign(n, false);
    // The base event: its host time anchors every event time to the common epoch.
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    check(cudaEventCreate(&base_), "cudaEventCreate");
    check(cudaEventRecord(base_, streams_[0]), "cudaEventRecord");
    check(cudaEventSynchronize(base_), "cudaEventSynchronize");
    base_s_ = now_s();
    hidden_ = std::max<int64_t>(s.job.model.hidden / std::max<int64_t>(s.layout.tp, 1), 1);
    vocab_ = std::max<int64_t>(s.job.model.vocab / std::max<int64_t>(s.layout.tp, 1), 1);
  }

  void issue(uint32_t i, std::span<const uint32_t> wait_for) override {
    const Op& op = program_->ops[i];
    const size_t st = static_cast<size_t>(op.stream);
    cudaStream_t stream = streams_[st];
    try {
      for (uint32_t d : wait_for)
        if (program_->ops[d].stream != op.stream)
          check(cudaStreamWaitEvent(stream, end_[d], 0), "cudaStreamWaitEvent");
      check(cudaEventRecord(start_[i], stream), "cudaEventRecord");
      launch(op, arenas_[st], stream);
      check(cudaEventRecord(end_[i], stream), "cudaEventRecord");
    } catch (const BackendError& e) {
      std::fprintf(stderr, "twinscale run: rank %lld: op %u failed to launch: %s\n", static_cast<long long>(rank_), i,
                   e.what());
      failed_[i] = true;
    }
  }

  OpStatus poll(uint32_t i) override {
    if (failed_[i]) return OpStatus::Failed;
    const cudaError_t e = cudaEventQuery(end_[i]);
    if (e == cudaSuccess) return OpStatus::Done;
    if (e != cudaErrorNotReady) return OpStatus::Failed;
    const Op& op = program_->ops[i];
    if (op.is_communication()) {
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comms_[static_cast<size_t>(op.group)], &async);
      if (async != ncclSuccess && async != ncclInProgress) return OpStatus::Failed;
    }
    return OpStatus::Pending;
  }

  void wait_for_progress(double max_wait_s) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(max_wait_s));
  }

  std::vector<DeviceOpTiming> timings() override {
    std::vector<DeviceOpTiming> t(program_->ops.size());
    for (size_t i = 0; i < t.size(); ++i) {
      if (failed_[i] || cudaEventQuery(end_[i]) != cudaSuccess) continue;
      float a = 0, b = 0;
      if (cudaEventElapsedTime(&a, base_, start_[i]) != cudaSuccess ||
          cudaEventElapsedTime(&b, base_, end_[i]) != cudaSuccess)
        continue;
      t[i] = DeviceOpTiming{base_s_ + a * 1e-3, base_s_ + b * 1e-3, true};
    }
    return t;
  }

  void abort() override {
    for (ncclComm_t& c : comms_)
      if (c) {
        ncclCommAbort(c);
        c = nullptr;
      }
    aborted_ = true;
  }

private:
  void nccl(ncclResult_t r, GroupKind g, const char* what) {
    ncclComm_t c = comms_[static_cast<size_t>(g)];
    if (r == ncclInProgress) return wait_nccl(c, r, timeout_s_, what);
    if (r != ncclSuccess) throw BackendError(std::string("NCCL: ") + what + ": " + ncclGetErrorString(r));
  }

  void launch(const Op& op, Arena& a, cudaStream_t stream) {
    const auto& sh = op.shape;
    const float one = 1.0f, zero = 0.0f;
    switch (op.kind) {
    case OpKind::Gemm: {  // row-major C(m×n) = A(m×k)·B(k×n) as column-major Cᵀ = Bᵀ·Aᵀ
      const int m = static_cast<int>(sh[0]), n = static_cast<int>(sh[1]), k = static_cast<int>(sh[2]);
      check(cublasSetStream(cublas_, stream), "cublasSetStream");
      check(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, a.ptr[1], CUDA_R_16BF, n, a.ptr[0],
                         CUDA_R_16BF, k, &zero, a.ptr[2], CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx (bf16)");
      return;
    }
    case OpKind::Attention: {  // per head: S = Q·Kᵀ, softmax (causal, window), O = S·V
      const int bh = static_cast<int>(std::max<int64_t>(sh[0], 1)), s = static_cast<int>(sh[1]),
                d = static_cast<int>(sh[2]);
      const long long sd = static_cast<long long>(s) * d, ss = static_cast<long long>(s) * s;
      check(cublasSetStream(cublas_, stream), "cublasSetStream");
      check(cublasGemmStridedBatchedEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, s, s, d, &one, a.ptr[1], CUDA_R_16BF, d, sd,
                                       a.ptr[0], CUDA_R_16BF, d, sd, &zero, a.ptr[3], CUDA_R_16BF, s, ss, bh,
                                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmStridedBatchedEx (scores)");
      check(static_cast<cudaError_t>(cuda::launch_softmax(a.ptr[3], static_cast<int64_t>(bh) * s, s, sh[3], stream)),
            "softmax kernel");
      check(cublasGemmStridedBatchedEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, d, s, s, &one, a.ptr[2], CUDA_R_16BF, d, sd,
                                       a.ptr[3], CUDA_R_16BF, s, ss, &zero, a.ptr[0], CUDA_R_16BF, d, sd, bh,
                                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmStridedBatchedEx (output)");
      return;
    }
    case OpKind::Elementwise: {
      const int64_t n = std::max<int64_t>(sh[0], 1);
      if (op.kernel == Kernel::DataLoad) {
        check(cudaMemcpyAsync(a.ptr[4], host_batch_, static_cast<size_t>(std::min(op.bytes, static_cast<double>(a.bytes[4]))),
                              cudaMemcpyHostToDevice, stream),
              "cudaMemcpyAsync (batch, host → device)");
        return;
      }
      cuda::ElementwiseMode mode = cuda::ElementwiseMode::ResidualAdd;
      int64_t row = hidden_;
      switch (op.kernel) {
      case Kernel::LayerNorm: mode = cuda::ElementwiseMode::LayerNormUnfused; break;
      case Kernel::FusedLayerNorm: mode = cuda::ElementwiseMode::LayerNorm; break;
      case Kernel::Gelu: mode = cuda::ElementwiseMode::Gelu; break;
      case Kernel::FusedBiasGelu: mode = cuda::ElementwiseMode::FusedBiasGelu; break;
      case Kernel::Dropout: mode = cuda::ElementwiseMode::Dropout; break;
      case Kernel::Embedding: mode = cuda::ElementwiseMode::Embedding; break;
      case Kernel::CrossEntropy:
        mode = cuda::ElementwiseMode::CrossEntropy;
        row = vocab_;
        break;
      default: break;
      }
      check(static_cast<cudaError_t>(cuda::launch_elementwise(mode, a.ptr[4], a.ptr[5], n, row, stream)),
            "elementwise kernel");
      return;
    }
    case OpKind::OptimizerStep:
      check(static_cast<cudaError_t>(cuda::launch_optimizer(op.kernel == Kernel::LambStep, opt_[0], opt_[1], opt_[2],
                                                            opt_[3], std::min<int64_t>(sh[0], opt_elems_), stream)),
            "optimizer kernel");
      return;
    default: break;
    }
    // Communication: bf16 payloads, op.bytes as scheduled.
    ncclComm_t comm = comms_[static_cast<size_t>(op.group)];
    if (!comm) throw BackendError("no NCCL communicator for group " + std::string(schedules::to_string(op.group)));
    const int64_t n = schedule_.layout.group_size(op.group);
    const size_t count = static_cast<size_t>(std::max(1.0, std::ceil(op.bytes / 2.0)));
    const size_t per = std::max<size_t>(1, count / static_cast<size_t>(n));
    auto* send = static_cast<char*>(a.ptr[6]);
    auto* recv = static_cast<char*>(a.ptr[7]);
    switch (op.kind) {
    case OpKind::AllReduce:
      nccl(ncclAllReduce(send, recv, count, ncclBfloat16, ncclSum, comm, stream), op.group, "ncclAllReduce");
      return;
    case OpKind::AllGather:
      nccl(ncclAllGather(send, recv, per, ncclBfloat16, comm, stream), op.group, "ncclAllGather");
      return;
    case OpKind::ReduceScatter:
      nccl(ncclReduceScatter(send, recv, per, ncclBfloat16, ncclSum, comm, stream), op.group, "ncclReduceScatter");
      return;
    case OpKind::Broadcast:
      nccl(ncclBroadcast(send, recv, count, ncclBfloat16, op.peer >= 0 ? op.peer : 0, comm, stream), op.group,
           "ncclBroadcast");
      return;
    case OpKind::AllToAll:
      nccl(ncclGroupStart(), op.group, "ncclGroupStart");
      for (int64_t j = 0; j < n; ++j) {
        nccl(ncclSend(send + j * per * 2, per, ncclBfloat16, static_cast<int>(j), comm, stream), op.group, "ncclSend");
        nccl(ncclRecv(recv + j * per * 2, per, ncclBfloat16, static_cast<int>(j), comm, stream), op.group, "ncclRecv");
      }
      nccl(ncclGroupEnd(), op.group, "ncclGroupEnd (all-to-all)");
      return;
    case OpKind::Send:
    case OpKind::Recv:
      nccl(ncclGroupStart(), op.group, "ncclGroupStart");
      if (op.kind == OpKind::Send)
        nccl(ncclSend(send, count, ncclBfloat16, op.peer, comm, stream), op.group, "ncclSend");
      else
        nccl(ncclRecv(recv, count, ncclBfloat16, op.peer, comm, stream), op.group, "ncclRecv");
      nccl(ncclGroupEnd(), op.group, "ncclGroupEnd (p2p)");
      return;
    default: TWINSCALE_ASSERT(false, "unhandled op kind in the CUDA device");
    }
  }

  const schedules::Schedule& schedule_;
  int64_t rank_;
  std::array<ncclComm_t, 5> comms_;
  double epoch_, timeout_s_;
  const schedules::Program* program_ = nullptr;
  std::array<cudaStream_t, schedules::kStreamCount> streams_{};
  std::array<Arena, schedules::kStreamCount> arenas_{};
  std::array<float*, 4> opt_{};
  int64_t opt_elems_ = 0, hidden_ = 1024, vocab_ = 1024;
  void* host_batch_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::vector<cudaEvent_t> start_, end_;
  std::vector<bool> failed_;
  cudaEvent_t base_ = nullptr;
  double base_s_ = 0;
  bool aborted_ = false;
};

} // namespace

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

std::unique_ptr<Device> make_cuda_device(const schedules::Schedule& schedule, int64_t rank,
                                         const BroadcastFromRoot& broadcast, double epoch_steady_s,
                                         double timeout_s, std::vector<InitPhase>& phases) {
  const int gpus = cuda_device_count();
  if (gpus == 0) throw BackendError("--device cuda: no CUDA device is visible to rank " + std::to_string(rank));
  double t = steady_s();
  check(cudaSetDevice(static_cast<int>(local_rank(rank) % gpus)), "cudaSetDevice");
  check(cudaFree(nullptr), "CUDA context creation");
  phases.push_back({"cuda_context", steady_s() - t});

  t = steady_s();
  ncclUniqueId id{};
  if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) throw BackendError("NCCL: ncclGetUniqueId failed");
  broadcast(&id, sizeof id, "nccl:world");
  phases.push_back({"nccl_id", steady_s() - t});

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // non-blocking: every wait below is bounded by timeout_s
  std::array<ncclComm_t, 5> comms{};
  t = steady_s();
  ncclComm_t world = nullptr;
  const int size = static_cast<int>(schedule.world());
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 23, 0)
  ncclResult_t r = ncclCommInitRankScalable(&world, size, static_cast<int>(rank), 1, &id, &config);
#else
  ncclResult_t r = ncclCommInitRankConfig(&world, size, id, static_cast<int>(rank), &config);
#endif
  if (r != ncclSuccess && r != ncclInProgress) throw BackendError(std::string("NCCL: world init: ") + ncclGetErrorString(r));
  wait_nccl(world, r, timeout_s, "world communicator initialisation");
  comms[static_cast<size_t>(GroupKind::World)] = world;
  phases.push_back({"nccl_world", steady_s() - t});

  for (GroupKind kind : {GroupKind::Tp, GroupKind::Dp, GroupKind::Pp, GroupKind::Embedding}) {
    t = steady_s();
    const auto members = schedule.layout.group_members(kind, rank);
    const bool member = std::find(members.begin(), members.end(), rank) != members.end();
    const int color = member ? static_cast<int>(members.front()) : NCCL_SPLIT_NOCOLOR;
    const int key = member ? static_cast<int>(schedule.layout.group_rank(kind, rank)) : 0;
    ncclComm_t c = nullptr;
    r = ncclCommSplit(world, color, key, &c, &config);
    if (r != ncclSuccess && r != ncclInProgress)
      throw BackendError("NCCL: ncclCommSplit (" + std::string(schedules::to_string(kind)) + "): " + ncclGetErrorString(r));
    wait_nccl(world, r, timeout_s, "ncclCommSplit (" + std::string(schedules::to_string(kind)) + ")");
    if (c) wait_nccl(c, ncclInProgress, timeout_s, "communicator " + std::string(schedules::to_string(kind)));
    comms[static_cast<size_t>(kind)] = c;
    phases.push_back({"nccl_" + std::string(schedules::to_string(kind)), steady_s() - t});
  }
  return std::make_unique<CudaDevice>(schedule, rank, comms, epoch_steady_s, timeout_s);
}

} // namespace twinscale::backend
