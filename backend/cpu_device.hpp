// The CPU device: real processes under mpirun, real bytes. Compute ops run on one thread
// per compute stream (Compute, and Data for asynchronous loading; Eigen, fp32, shapes
// divided by shape_divisor); communication ops are
// non-blocking MPI operations (MPI_Iallreduce, MPI_Isend, …) on the rank's group
// communicators, progressed by MPI_Test from the executor's thread — so communication
// overlaps compute wherever the schedule allows. Results of every collective and
// receive are checked against the values the peers sent (verify). Like NCCL, the ops
// of one communicator (op_channel: one per group, one per directed p2p pair) run in
// issue order: each is posted only once the previous one there completed
// (schedules/nccl_order.hpp), so an issue order that would deadlock on GPUs deadlocks
// here too.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "backend/device.hpp"

namespace twinscale::backend {

namespace detail {
class MpiGroups;
}

struct CpuDeviceOptions {
  /// Every compute dimension (GEMM m, n, k; attention heads, sequence, head dim;
  /// elementwise elements) and every message size is divided by this (rounded up).
  int64_t shape_divisor = 1;
  /// Check received data (all-reduce sums, gathered blocks, p2p payloads).
  bool verify = true;
  /// A kernel needing a larger single buffer is an error (asks for a larger divisor).
  double max_buffer_bytes = 1e9;
  /// Fault injection (straggler diagnosis): every compute op of rank
  /// `delay_rank` takes `compute_delay_s` longer (the worker sleeps after the kernel).
  int64_t delay_rank = -1;
  double compute_delay_s = 0;
  /// prepare() runs every distinct compute op once (buffers at full size, warm), then
  /// waits for every rank at a world barrier (at most start_timeout_s), so the first
  /// iteration is timed warm and all ranks start together (docs/backend.md).
  bool warm_up = true;
  double start_timeout_s = 120;
  /// Whether another rank has given up on the run or died (the run directory's abort flag;
  /// a rank of this host whose process is gone, backend/detail/peer_watch.hpp): a
  /// rank still waiting at the start barrier stops then, instead of after start_timeout_s
  /// (a dead peer never completes the barrier). Empty: not checked.
  std::function<bool()> should_abort;
};

class CpuDevice final : public Device {
public:
  /// `groups` must outlive the device; `epoch_steady_s` is the common epoch
  /// (std::chrono::steady_clock seconds, agreed by all ranks of one host).
  CpuDevice(CpuDeviceOptions options, const detail::MpiGroups& groups, double epoch_steady_s);
  ~CpuDevice() override;

  std::string_view name() const override { return "cpu"; }
  bool orders_on_device() const override { return false; }
  void prepare(const schedules::Schedule& schedule, int64_t rank) override;
  void issue(uint32_t index, std::span<const uint32_t> wait_for) override;
  OpStatus poll(uint32_t index) override;
  void wait_for_progress(double max_wait_s) override;
  std::vector<DeviceOpTiming> timings() override;
  void abort() override;
  double now_s() const override;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace twinscale::backend
