// The device interface the one executor (backend/executor.hpp) drives. Two devices
// implement it: CpuDevice (MPI + Eigen, real processes and bytes) and CudaDevice
// (cuBLAS, NCCL, CUDA streams and events). A device owns its streams, communicators
// and buffers; the executor owns the order in which ops are issued.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schedules/schedule.hpp"

namespace twinscale::backend {

enum class OpStatus : uint8_t { Pending, Done, Failed };

/// Start and end of one op as the device measured it, in seconds since the run's common
/// epoch (all ranks agree on the epoch; see CpuDevice/CudaDevice for how). Named apart
/// from the simulator's sim::detail::OpTiming.
struct DeviceOpTiming {
  double start_s = 0;
  double end_s = 0;
  bool valid = false;
};

class Device {
public:
  virtual ~Device() = default;

  /// Trace::source of this device: "cpu" or "cuda".
  virtual std::string_view name() const = 0;

  /// True when the device itself orders an op after its stream predecessor and its
  /// dependencies (CUDA: stream order + cudaStreamWaitEvent), so the executor may issue
  /// an op once its dependencies have been *issued*. False when the executor must wait
  /// until they have *completed* (CPU: MPI requests and a compute thread).
  virtual bool orders_on_device() const = 0;

  /// Allocates what `rank`'s program needs (buffers, per-op events). Called once.
  virtual void prepare(const schedules::Schedule& schedule, int64_t rank) = 0;

  /// Issues op `index` of the prepared program. `wait_for` are the ops it must follow
  /// on the device (its dependencies and its stream predecessor); only meaningful when
  /// orders_on_device(). Must not block on other ranks.
  virtual void issue(uint32_t index, std::span<const uint32_t> wait_for) = 0;

  /// Non-blocking: progresses communication and reports whether op `index` completed.
  virtual OpStatus poll(uint32_t index) = 0;

  /// Sleeps until something may have progressed, at most `max_wait_s` (the executor's
  /// idle wait: no busy spinning on oversubscribed CPUs).
  virtual void wait_for_progress(double max_wait_s) = 0;

  /// Per-op timings, read back once at the end of the run (M18: no host
  /// synchronisation on the hot path). Entries of ops that did not complete are invalid.
  virtual std::vector<DeviceOpTiming> timings() = 0;

  /// The run stopped on a timeout: abandon what is in flight (CUDA: ncclCommAbort on
  /// every communicator) so that the process can report and leave.
  virtual void abort() = 0;

  /// Seconds since the common epoch (the same clock as timings()).
  virtual double now_s() const = 0;

  /// Checkpoint stage 1 (M16, blocking): `state` stands for this rank's training state
  /// in device memory; returns its copy in host memory. CPU: a host copy. CUDA: the
  /// state lives in GPU memory and is copied device → pinned host memory.
  virtual std::vector<uint8_t> stage1_snapshot(std::span<const uint8_t> state) { return {state.begin(), state.end()}; }
};

} // namespace twinscale::backend
