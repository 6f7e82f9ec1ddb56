// The CUDA device (see cuda_device.hpp): streams, buffers, per-op events and launches.
// Communicators live in nccl_comms.{hpp,cpp}.
#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/plugin.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include <cuda_runtime.h>
#include <nccl.h>

#include "backend/cuda/compute.hpp"
#include "backend/cuda/kernels.hpp"
#include "backend/cuda/nccl_comms.hpp"
#include "backend/error.hpp"
#include "schedules/error.hpp"
#include "schedules/nccl_order.hpp"

namespace twinscale::backend {

using schedules::GroupKind;
using schedules::Kernel;
using schedules::Op;
using schedules::OpKind;

namespace {

double steady_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw BackendError(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

void check_nccl(ncclResult_t r, const char* what) {
  // Blocking communicators return once the kernel is enqueued; ncclInProgress would
  // only come from a non-blocking one, whose completion poll() watches.
  if (r != ncclSuccess && r != ncclInProgress)
    throw BackendError(std::string("NCCL: ") + what + ": " + ncclGetErrorString(r));
}

size_t round_up(double bytes) { return static_cast<size_t>(std::max(16.0, std::ceil(bytes / 256.0) * 256.0)); }

/// Element counts of a communication op: its payload of op.bytes in its element type,
/// split over the group. BF16 for every message (an FP8 all-gather moves the same bytes
/// as bf16 pairs), FP32 for fp32 ones (FP8's amax all-reduce, fp32 gradient reductions),
/// reduced with MAX for the amaxes (Transformer Engine's amax reduction) and SUM else.
struct CommCounts {
  size_t count = 1; // elements of the full payload (odd byte counts round up)
  size_t per = 1;   // elements per member (all-gather, reduce-scatter, all-to-all)
  size_t send = 1, recv = 1;
  double element = 2; // bytes
  ncclDataType_t type = ncclBfloat16;
};

CommCounts comm_counts(const Op& op, int64_t n) {
  CommCounts c;
  if (op.dtype == schedules::DType::FP32) {
    c.element = 4;
    c.type = ncclFloat;
  }
  c.count = static_cast<size_t>(std::max(1.0, std::ceil(op.bytes / c.element)));
  c.per = std::max<size_t>(1, (c.count + static_cast<size_t>(n) - 1) / static_cast<size_t>(n));
  const size_t all = c.per * static_cast<size_t>(n);
  switch (op.kind) {
  case OpKind::AllGather:
    c.send = c.per;
    c.recv = all;
    break;
  case OpKind::ReduceScatter:
    c.send = all;
    c.recv = c.per;
    break;
  case OpKind::AllToAll: c.send = c.recv = all; break;
  default: c.send = c.recv = c.count; break;
  }
  return c;
}

struct CommBuffers {
  size_t send_bytes = 0, recv_bytes = 0;
  void* send = nullptr;
  void* recv = nullptr;
};

class CudaDevice final : public Device {
public:
  CudaDevice(const schedules::Schedule& schedule, int64_t rank, std::unique_ptr<cuda::CommSet> comms, double epoch,
             double timeout_s)
      : schedule_(schedule), rank_(rank), comms_(std::move(comms)), epoch_(epoch), timeout_s_(timeout_s) {}

  ~CudaDevice() override {
    const bool clean = !comms_->aborted() && cudaDeviceSynchronize() == cudaSuccess;
    if (clean)
      comms_->close(timeout_s_);
    else
      comms_->abort_all();
    for (cudaEvent_t e : start_) cudaEventDestroy(e);
    for (cudaEvent_t e : end_) cudaEventDestroy(e);
    if (base_) cudaEventDestroy(base_);
    if (!clean) { // kernels may still be stuck: leave their memory and streams to the process exit
      if (compute_) compute_->leak();
      (void)compute_.release();
      return;
    }
    compute_.reset();
    for (auto& [name, b] : comm_buffers_) {
      cudaFree(b.send);
      cudaFree(b.recv);
    }
    cudaFree(state_dev_);
    cudaFreeHost(state_host_);
    for (auto& [name, st] : streams_) cudaStreamDestroy(st);
  }

  std::string_view name() const override { return "cuda"; }
  bool orders_on_device() const override { return true; }
  double now_s() const override { return steady_s() - epoch_; }

  void prepare(const schedules::Schedule& s, int64_t rank) override {
    program_ = &s.program(rank);
    const size_t n = program_->ops.size();
    create_streams(s, rank);
    compute_ = std::make_unique<cuda::ComputeKernels>(s);
    compute_->prepare(*program_, rank, compute_stream(schedules::Stream::Compute));
    size_comm_buffers(s, rank);
    allocate_comm_buffers();
    start_.resize(n);
    end_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      check(cudaEventCreate(&start_[i]), "cudaEventCreate");
      check(cudaEventCreate(&end_[i]), "cudaEventCreate");
    }
    failed_.assign(n, false);
    issue_order_.reserve(n);
    warm_up();
    // The base event: its host time anchors every event time to the common epoch.
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    check(cudaEventCreate(&base_), "cudaEventCreate");
    check(cudaEventRecord(base_, compute_stream(schedules::Stream::Compute)), "cudaEventRecord");
    check(cudaEventSynchronize(base_), "cudaEventSynchronize");
    base_s_ = now_s();
  }

  void issue(uint32_t i, std::span<const uint32_t> wait_for) override {
    const Op& op = program_->ops[i];
    cudaStream_t stream = stream_of_[i];
    try {
      for (uint32_t d : wait_for)
        if (stream_of_[d] != stream) check(cudaStreamWaitEvent(stream, end_[d], 0), "cudaStreamWaitEvent");
      // Events right around the enqueue: the op's own pair measures it, nothing else.
      check(cudaEventRecord(start_[i], stream), "cudaEventRecord");
      if (op.is_communication())
        launch_comm(i, op, stream);
      else
        compute_->launch(op, stream);
      check(cudaEventRecord(end_[i], stream), "cudaEventRecord");
      issue_order_.push_back(i);
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
      const cuda::Channel c = comms_->get(channel_[i]);
      if (!c.comm) return OpStatus::Failed; // aborted
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(c.comm, &async) != ncclSuccess) return OpStatus::Failed;
      if (async != ncclSuccess && async != ncclInProgress) return OpStatus::Failed;
    }
    return OpStatus::Pending;
  }

  void wait_for_progress(double max_wait_s) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(max_wait_s));
  }

  /// Start of each op chained from the previous one in issue order (short, precise
  /// float intervals accumulated in double, instead of one float offset from a base
  /// that loses precision past ~33 s); its duration from its own event pair.
  std::vector<DeviceOpTiming> timings() override {
    std::vector<DeviceOpTiming> t(program_->ops.size());
    double prev_start_s = base_s_;
    cudaEvent_t prev = base_;
    for (uint32_t i : issue_order_) {
      if (failed_[i] || cudaEventQuery(end_[i]) != cudaSuccess) continue;
      float since_prev = 0, duration = 0;
      if (cudaEventElapsedTime(&since_prev, prev, start_[i]) != cudaSuccess ||
          cudaEventElapsedTime(&duration, start_[i], end_[i]) != cudaSuccess)
        continue;
      const double start_s = prev_start_s + since_prev * 1e-3;
      t[i] = DeviceOpTiming{start_s, start_s + std::max(0.0f, duration) * 1e-3, true};
      prev_start_s = start_s;
      prev = start_[i];
    }
    return t;
  }

  void abort() override { comms_->abort_all(); }

  std::vector<uint8_t> stage1_snapshot(std::span<const uint8_t> state) override {
    // The state is placed in GPU memory once (as a restore would), then stage 1 copies
    // it device → pinned host memory and waits for the copy.
    const size_t bytes = state.size();
    std::vector<uint8_t> out(bytes);
    if (bytes == 0) return out;
    // Its own stream: the runner takes stage 1 before the executor prepares the device
    // (found on the H200: the compute streams do not exist yet).
    cudaStream_t st = nullptr;
    check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate (checkpoint)");
    struct StreamGuard {
      cudaStream_t s;
      ~StreamGuard() { cudaStreamDestroy(s); }
    } guard{st};
    check(cudaMalloc(&state_dev_, bytes), "cudaMalloc (checkpoint state)");
    check(cudaMallocHost(&state_host_, bytes), "cudaMallocHost (pinned checkpoint buffer)");
    check(cudaMemcpyAsync(state_dev_, state.data(), bytes, cudaMemcpyHostToDevice, st), "cudaMemcpyAsync (state)");
    check(cudaMemcpyAsync(state_host_, state_dev_, bytes, cudaMemcpyDeviceToHost, st),
          "cudaMemcpyAsync (stage 1, device → pinned host)");
    check(cudaStreamSynchronize(st), "cudaStreamSynchronize (stage 1)");
    std::copy_n(static_cast<const uint8_t*>(state_host_), bytes, out.begin());
    return out;
  }

private:
  cudaStream_t compute_stream(schedules::Stream s) { return streams_.at("stream:" + std::string(to_string(s))); }

  /// Compute and data streams at the lowest priority; one stream per communicator:
  /// tensor/pipeline/embedding/world at the highest (the computation waits for them
  /// first), data-parallel priority classes spread over the range in between, higher
  /// Op::priority closer to the top.
  void create_streams(const schedules::Schedule& s, int64_t rank) {
    int least = 0, greatest = 0;
    check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
    std::set<int32_t> dp_classes;
    for (const Op& op : program_->ops)
      if (op.is_collective() && op.group == GroupKind::Dp) dp_classes.insert(op.priority);
    auto make = [&](const std::string& key, int prio) {
      if (streams_.count(key)) return;
      cudaStream_t st = nullptr;
      check(cudaStreamCreateWithPriority(&st, cudaStreamNonBlocking, prio), "cudaStreamCreateWithPriority");
      streams_[key] = st;
    };
    stream_of_.assign(program_->ops.size(), nullptr);
    channel_.assign(program_->ops.size(), {});
    for (size_t i = 0; i < program_->ops.size(); ++i) {
      const Op& op = program_->ops[i];
      std::string key;
      int prio = least;
      if (!op.is_communication()) {
        key = "stream:" + std::string(to_string(op.stream));
      } else {
        channel_[i] = schedules::communicator_of(s, rank, op, schedules::kDeviceCommModel);
        key = "comm:" + channel_[i];
        prio = greatest;
        if (op.is_collective() && op.group == GroupKind::Dp && dp_classes.size() > 0) {
          // rank of the class among the dp classes: 0 = lowest priority value
          const auto k = static_cast<int>(std::distance(dp_classes.begin(), dp_classes.find(op.priority)));
          const int span = least - greatest; // ≥ 0 (numerically lower is higher priority)
          prio = least - (span * (k + 1)) / static_cast<int>(dp_classes.size() + 1);
        }
      }
      make(key, prio);
      stream_of_[i] = streams_[key];
    }
    make("stream:" + std::string(to_string(schedules::Stream::Compute)), least);
  }

  void size_comm_buffers(const schedules::Schedule& s, int64_t rank) {
    for (const Op& op : program_->ops) {
      if (!op.is_communication()) continue;
      const CommCounts c = comm_counts(op, s.layout.group_size(op.group));
      CommBuffers& b = comm_buffers_[schedules::communicator_of(s, rank, op, schedules::kDeviceCommModel)];
      b.send_bytes = std::max(b.send_bytes, round_up(c.element * static_cast<double>(c.send)));
      b.recv_bytes = std::max(b.recv_bytes, round_up(c.element * static_cast<double>(c.recv)));
    }
  }

  void allocate_comm_buffers() {
    cudaStream_t fill = compute_stream(schedules::Stream::Compute);
    auto alloc = [&](size_t bytes, const char* what) {
      void* p = nullptr;
      check(cudaMalloc(&p, bytes), what);
      check(static_cast<cudaError_t>(cuda::launch_fill(p, static_cast<int64_t>(bytes / 2), 1.0f, fill)), "fill kernel");
      return p;
    };
    for (auto& [name, b] : comm_buffers_) {
      b.send = alloc(b.send_bytes, "cudaMalloc (communication send buffer)");
      b.recv = alloc(b.recv_bytes, "cudaMalloc (communication receive buffer)");
    }
  }

  /// One launch of every distinct compute kernel and shape before the clock starts: the
  /// first launch of a kernel loads its module and cuBLAS picks its algorithm on the
  /// host (82 ms for the first 4096³ GEMM on an H200, 0.2 ms after), which the op's
  /// own events would otherwise measure. Communication is not warmed up: a
  /// communicator's first op carries NCCL's connection set-up, as in training.
  void warm_up() {
    std::set<std::tuple<int, int, std::array<int64_t, 4>, int>> seen;
    for (const Op& op : program_->ops) {
      if (op.is_communication() || op.kernel == Kernel::DataLoad) continue;
      if (!seen.emplace(static_cast<int>(op.kind), static_cast<int>(op.kernel), op.shape, compute_->variant(op)).second)
        continue;
      compute_->launch(op, compute_stream(op.stream));
    }
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (warm-up)");
  }

  void launch_comm(uint32_t i, const Op& op, cudaStream_t stream) {
    const cuda::Channel ch = comms_->get(channel_[i]);
    if (!ch.comm)
      throw BackendError("no NCCL communicator for channel " + channel_[i] + (comms_->aborted() ? " (aborted)" : ""));
    const int64_t n = schedule_.layout.group_size(op.group);
    const CommCounts c = comm_counts(op, n);
    const CommBuffers& b = comm_buffers_.at(channel_[i]);
    auto* send = static_cast<char*>(b.send);
    auto* recv = static_cast<char*>(b.recv);
    ncclComm_t comm = ch.comm;
    const ncclDataType_t t = c.type;
    const size_t chunk = c.per * static_cast<size_t>(c.element);
    const std::string& name = schedule_.names[op.name];
    const ncclRedOp_t reduce = name.rfind("fp8.amax", 0) == 0 ? ncclMax : ncclSum;
    switch (op.kind) {
    case OpKind::AllReduce:
      check_nccl(ncclAllReduce(send, recv, c.count, t, reduce, comm, stream), "ncclAllReduce");
      return;
    case OpKind::AllGather: check_nccl(ncclAllGather(send, recv, c.per, t, comm, stream), "ncclAllGather"); return;
    case OpKind::ReduceScatter:
      check_nccl(ncclReduceScatter(send, recv, c.per, t, reduce, comm, stream), "ncclReduceScatter");
      return;
    case OpKind::Broadcast:
      check_nccl(ncclBroadcast(send, recv, c.count, t, op.peer >= 0 ? op.peer : 0, comm, stream), "ncclBroadcast");
      return;
    case OpKind::AllToAll: {
      cuda::GroupGuard group;
      for (int64_t j = 0; j < n; ++j) {
        check_nccl(ncclSend(send + j * chunk, c.per, t, static_cast<int>(j), comm, stream), "ncclSend");
        check_nccl(ncclRecv(recv + j * chunk, c.per, t, static_cast<int>(j), comm, stream), "ncclRecv");
      }
      check_nccl(group.end(), "ncclGroupEnd (all-to-all)");
      return;
    }
    case OpKind::Send: check_nccl(ncclSend(send, c.count, t, ch.peer, comm, stream), "ncclSend"); return;
    case OpKind::Recv: check_nccl(ncclRecv(recv, c.count, t, ch.peer, comm, stream), "ncclRecv"); return;
    default: TWINSCALE_ASSERT(false, "unhandled op kind in the CUDA device");
    }
  }

  const schedules::Schedule& schedule_;
  int64_t rank_;
  std::unique_ptr<cuda::CommSet> comms_;
  double epoch_, timeout_s_;
  const schedules::Program* program_ = nullptr;
  std::map<std::string, cudaStream_t> streams_; // "stream:<kind>" (compute) / "comm:<channel>"
  std::vector<cudaStream_t> stream_of_;         // per op
  std::vector<std::string> channel_;            // per communication op
  std::unique_ptr<cuda::ComputeKernels> compute_;
  std::map<std::string, CommBuffers> comm_buffers_; // per channel
  void* state_dev_ = nullptr;
  void* state_host_ = nullptr;
  std::vector<cudaEvent_t> start_, end_;
  std::vector<uint32_t> issue_order_;
  std::vector<bool> failed_;
  cudaEvent_t base_ = nullptr;
  double base_s_ = 0;
};

} // namespace

int cuda::device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

std::unique_ptr<Device> cuda::make_device(const schedules::Schedule& schedule, int64_t rank,
                                          const BroadcastFromRoot& broadcast, double epoch_steady_s, double timeout_s,
                                          std::vector<InitPhase>& phases) {
  cuda::check_nccl_version();
  const int gpus = cuda::device_count();
  if (gpus == 0) throw BackendError("--device cuda: no CUDA device is visible to rank " + std::to_string(rank));
  double t = steady_s();
  check(cudaSetDevice(cuda::local_gpu(rank, gpus)), "cudaSetDevice");
  check(cudaFree(nullptr), "CUDA context creation");
  phases.push_back({"cuda_context", steady_s() - t});
  auto comms = cuda::create_comms(schedule, rank, broadcast, timeout_s, phases);
  return std::make_unique<CudaDevice>(schedule, rank, std::move(comms), epoch_steady_s, timeout_s);
}

} // namespace twinscale::backend
