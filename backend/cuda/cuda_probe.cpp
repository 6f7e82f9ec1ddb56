// The CUDA device's side of the probe (cuda_probe.hpp).
#include "backend/cuda/cuda_probe.hpp"
#include "backend/cuda/plugin.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include "backend/cuda/compute.hpp"
#include "backend/cuda/fp8_kernels.hpp"
#include "backend/cuda/nccl_comms.hpp"
#include "backend/error.hpp"

namespace twinscale::backend {

using schedules::Op;
using schedules::OpKind;

namespace {

/// NCCL set-up and any one transfer must finish within this (a hang is an error).
constexpr double kTimeoutS = 300;

double steady_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw BackendError(std::string("probe --device cuda: CUDA: ") + what + ": " + cudaGetErrorString(e));
}

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess && r != ncclInProgress)
    throw BackendError(std::string("probe --device cuda: NCCL: ") + what + ": " + ncclGetErrorString(r));
}

class CudaProbeDevice final : public ProbeDevice {
public:
  CudaProbeDevice(const schedules::Schedule& schedule, int rank)
      : s_(schedule), rank_(rank), gpu_(cuda::current_gpu()) {
    int least = 0, greatest = 0;
    check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
    for (auto& st : streams_)
      check(cudaStreamCreateWithPriority(&st, cudaStreamNonBlocking, least), "cudaStreamCreate");
    comm_priority_ = greatest; // as the run's tensor/pipeline communication
    compute_ = std::make_unique<cuda::ComputeKernels>(schedule);
    compute_->prepare(schedule.program(rank), rank, streams_[0]);
    check(cudaMalloc(reinterpret_cast<void**>(&bad_), sizeof(unsigned long long)), "cudaMalloc (#wrong counter)");
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    free_bytes_ = static_cast<double>(free);
  }

  ~CudaProbeDevice() override {
    // After an abort (a transfer that outlived the timeout) kernels may be stuck: no sync.
    const bool clean = (!comms_ || !comms_->aborted()) && cudaDeviceSynchronize() == cudaSuccess;
    if (comms_) {
      if (clean)
        comms_->close(kTimeoutS);
      else
        comms_->abort_all();
    }
    if (!clean) { // kernels may be stuck: leave the memory to the process exit
      compute_->leak();
      return;
    }
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    for (auto& [n, st] : comm_streams_) cudaStreamDestroy(st);
    for (cudaStream_t st : streams_) cudaStreamDestroy(st);
    cudaFree(send_);
    cudaFree(recv_);
    cudaFree(bad_);
  }

  std::string source() const override { return "cuda"; }
  std::string device_tag(int world) const override {
    return "cuda:" + gpu_.name + " (" + std::to_string(world) + " ranks)";
  }
  schedules::DType dtype(const Op& op) const override { return op.dtype; }
  const char* element_type() const override { return "bfloat16"; }
  double element_bytes() const override { return 2; }
  /// Send and receive buffers of a message take about twice its bytes: a quarter of the
  /// memory left free after the kernels' buffers keeps a margin for NCCL's own.
  double message_limit() const override { return std::max(65536.0, free_bytes_ / 8); }

  std::vector<double> replay(const schedules::Program& program) override {
    std::vector<uint32_t> ops;
    for (uint32_t i = 0; i < program.ops.size(); ++i)
      if (!program.ops[i].is_communication()) ops.push_back(i);
    while (events_.size() < 2 * ops.size()) {
      cudaEvent_t e = nullptr;
      check(cudaEventCreate(&e), "cudaEventCreate");
      events_.push_back(e);
    }
    // Each op alone: it waits for the previous op's end (on whichever stream), then runs
    // between its own pair of events on its own stream.
    cudaEvent_t prev = nullptr;
    for (size_t k = 0; k < ops.size(); ++k) {
      const Op& op = program.ops[ops[k]];
      cudaStream_t st = streams_[static_cast<size_t>(op.stream)];
      if (prev) check(cudaStreamWaitEvent(st, prev, 0), "cudaStreamWaitEvent");
      check(cudaEventRecord(events_[2 * k], st), "cudaEventRecord");
      compute_->launch(op, st);
      check(cudaEventRecord(events_[2 * k + 1], st), "cudaEventRecord");
      prev = events_[2 * k + 1];
    }
    if (prev) wait(prev, "the replayed kernels");
    std::vector<double> times(program.ops.size(), -1);
    for (size_t k = 0; k < ops.size(); ++k) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, events_[2 * k], events_[2 * k + 1]), "cudaEventElapsedTime");
      times[ops[k]] = std::max(0.0f, ms) * 1e-3;
    }
    return times;
  }

  void open_groups(const std::set<int64_t>& sizes) override {
    BroadcastFromRoot broadcast = [](void* data, size_t bytes, const std::string& key) {
      if (MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        throw BackendError("probe --device cuda: MPI_Bcast of " + key + " failed");
    };
    std::vector<InitPhase> phases;
    comms_ = cuda::create_block_comms(s_, rank_, broadcast, kTimeoutS, sizes, phases);
    for (int64_t n : sizes) {
      cudaStream_t st = nullptr;
      check(cudaStreamCreateWithPriority(&st, cudaStreamNonBlocking, comm_priority_), "cudaStreamCreate");
      comm_streams_[n] = st;
      check(cudaEventCreate(&start_.try_emplace(n).first->second), "cudaEventCreate");
      check(cudaEventCreate(&end_.try_emplace(n).first->second), "cudaEventCreate");
    }
  }

  Transfer transfer(OpKind kind, int64_t n, double bytes) override;

  void close_groups() override {
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    if (comms_) comms_->close(kTimeoutS);
    comms_.reset();
    for (auto* events : {&start_, &end_})
      for (auto& [n, e] : *events) cudaEventDestroy(e);
    start_.clear();
    end_.clear();
  }

  std::string gpu_name() const override { return gpu_.name; }

private:
  /// Waits for `e`, bounded: a transfer whose peers never come is an error, not a hang.
  void wait(cudaEvent_t e, const char* what) {
    const double deadline = steady_s() + kTimeoutS;
    while (true) {
      const cudaError_t r = cudaEventQuery(e);
      if (r == cudaSuccess) return;
      if (r != cudaErrorNotReady) check(r, what);
      if (steady_s() > deadline) {
        if (comms_) comms_->abort_all();
        throw BackendError(std::string("probe --device cuda: rank ") + std::to_string(rank_) + ": " + what +
                           " did not finish within " + std::to_string(static_cast<int>(kTimeoutS)) +
                           " s; every communicator was aborted");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  void reserve(size_t bytes) {
    if (bytes <= buffer_bytes_) return;
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    cudaFree(send_);
    cudaFree(recv_);
    send_ = recv_ = nullptr;
    buffer_bytes_ = 0;
    check(cudaMalloc(&send_, bytes), "cudaMalloc (transfer send buffer)");
    check(cudaMalloc(&recv_, bytes), "cudaMalloc (transfer receive buffer)");
    buffer_bytes_ = bytes;
  }

  const schedules::Schedule& s_;
  int rank_;
  cuda::GpuInfo gpu_;
  std::array<cudaStream_t, schedules::kStreamCount> streams_{};
  int comm_priority_ = 0;
  std::unique_ptr<cuda::ComputeKernels> compute_;
  std::vector<cudaEvent_t> events_;
  std::unique_ptr<cuda::CommSet> comms_;
  std::map<int64_t, cudaStream_t> comm_streams_;
  std::map<int64_t, cudaEvent_t> start_, end_;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  size_t buffer_bytes_ = 0;
  unsigned long long* bad_ = nullptr;
  double free_bytes_ = 0;
};

/// One transfer. Every member sends a pattern the receivers can check: all-reduce and
/// reduce-scatter ones (the sum is n), all-gather and all-to-all its member number + 1
/// (chunk j arrives as j + 1), broadcast 7 from member 0, point-to-point 3. Exact in
/// bf16 up to groups of 256.
ProbeDevice::Transfer CudaProbeDevice::transfer(OpKind kind, int64_t n, double bytes) {
  Transfer t;
  const cuda::Channel ch = comms_ ? comms_->get(cuda::block_channel(n)) : cuda::Channel{};
  if (!ch.comm) return t;
  const int me = rank_ % static_cast<int>(n);
  if (kind == OpKind::Send && me > 1) return t; // half a ping-pong between members 0 and 1
  const size_t count = static_cast<size_t>(std::max(1.0, std::ceil(bytes / 2.0)));
  const size_t per = std::max<size_t>(1, (count + static_cast<size_t>(n) - 1) / static_cast<size_t>(n));
  const size_t all = per * static_cast<size_t>(n);
  reserve(2 * std::max(count, all));
  cudaStream_t st = comm_streams_.at(n);
  const auto fill = [&](void* p, size_t elems, float value, bool by_chunk) {
    check(static_cast<cudaError_t>(cuda::launch_pattern_fill(p, static_cast<int64_t>(elems), static_cast<int64_t>(per),
                                                             value, by_chunk, st)),
          "pattern fill kernel");
  };
  const float member = static_cast<float>(me + 1), group = static_cast<float>(n);
  size_t expect_elems = count;
  float expect = 0;
  bool by_chunk = false;
  switch (kind) {
  case OpKind::AllReduce:
    fill(send_, count, 1, false);
    expect = group;
    break;
  case OpKind::ReduceScatter:
    fill(send_, all, 1, false);
    expect = group;
    expect_elems = per;
    break;
  case OpKind::AllGather:
  case OpKind::AllToAll:
    fill(send_, kind == OpKind::AllGather ? per : all, member, false);
    by_chunk = true;
    expect_elems = all;
    break;
  case OpKind::Broadcast:
    fill(send_, count, me == 0 ? 7.0f : 0.0f, false);
    expect = 7;
    break;
  default:
    fill(send_, count, 3, false);
    expect = 3;
    break;
  }
  check(cudaMemsetAsync(recv_, 0, 2 * expect_elems, st), "cudaMemsetAsync");
  check(cudaMemsetAsync(bad_, 0, sizeof *bad_, st), "cudaMemsetAsync");
  check(cudaEventRecord(start_.at(n), st), "cudaEventRecord");
  ncclComm_t c = ch.comm;
  switch (kind) {
  case OpKind::AllReduce:
    check_nccl(ncclAllReduce(send_, recv_, count, ncclBfloat16, ncclSum, c, st), "ncclAllReduce");
    break;
  case OpKind::ReduceScatter:
    check_nccl(ncclReduceScatter(send_, recv_, per, ncclBfloat16, ncclSum, c, st), "ncclReduceScatter");
    break;
  case OpKind::AllGather: check_nccl(ncclAllGather(send_, recv_, per, ncclBfloat16, c, st), "ncclAllGather"); break;
  case OpKind::AllToAll: {
    cuda::GroupGuard g;
    for (int64_t j = 0; j < n; ++j) {
      check_nccl(ncclSend(static_cast<char*>(send_) + j * per * 2, per, ncclBfloat16, static_cast<int>(j), c, st),
                 "ncclSend");
      check_nccl(ncclRecv(static_cast<char*>(recv_) + j * per * 2, per, ncclBfloat16, static_cast<int>(j), c, st),
                 "ncclRecv");
    }
    check_nccl(g.end(), "ncclGroupEnd (all-to-all)");
    break;
  }
  case OpKind::Broadcast:
    check_nccl(ncclBroadcast(send_, recv_, count, ncclBfloat16, 0, c, st), "ncclBroadcast");
    break;
  default: { // ping-pong: member 0 sends then receives, member 1 the other way round
    const int peer = 1 - me;
    if (me == 0) {
      check_nccl(ncclSend(send_, count, ncclBfloat16, peer, c, st), "ncclSend");
      check_nccl(ncclRecv(recv_, count, ncclBfloat16, peer, c, st), "ncclRecv");
    } else {
      check_nccl(ncclRecv(recv_, count, ncclBfloat16, peer, c, st), "ncclRecv");
      check_nccl(ncclSend(send_, count, ncclBfloat16, peer, c, st), "ncclSend");
    }
  }
  }
  check(cudaEventRecord(end_.at(n), st), "cudaEventRecord");
  check(static_cast<cudaError_t>(cuda::launch_pattern_check(recv_, static_cast<int64_t>(expect_elems),
                                                            static_cast<int64_t>(per), expect, by_chunk, bad_, st)),
        "pattern check kernel");
  unsigned long long wrong = 0;
  check(cudaMemcpyAsync(&wrong, bad_, sizeof wrong, cudaMemcpyDeviceToHost, st), "cudaMemcpyAsync (#wrong)");
  wait(end_.at(n), "a transfer");
  check(cudaStreamSynchronize(st), "cudaStreamSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start_.at(n), end_.at(n)), "cudaEventElapsedTime");
  t.device_s = std::max(0.0f, ms) * 1e-3;
  t.wrong = static_cast<int64_t>(wrong);
  return t;
}

} // namespace

std::unique_ptr<ProbeDevice> cuda::make_probe_device(const schedules::Schedule& schedule, const ProbeOptions& options,
                                                     int rank, int world) {
  if (options.shape_divisor != 1)
    throw BackendError("probe --device cuda: --shape-divisor " + std::to_string(options.shape_divisor) +
                       " is the CPU device's; the CUDA device runs the scheduled shapes (leave it at 1)");
  cuda::check_nccl_version();
  const int gpus = cuda::device_count();
  if (gpus == 0)
    throw BackendError("probe --device cuda: no CUDA device is visible to rank " + std::to_string(rank) +
                       " (valid here: --device cpu)");
  check(cudaSetDevice(cuda::local_gpu(rank, gpus)), "cudaSetDevice");
  check(cudaFree(nullptr), "CUDA context creation");
  (void)world; // the driver checked it against the schedule
  return std::make_unique<CudaProbeDevice>(schedule, rank);
}

} // namespace twinscale::backend
