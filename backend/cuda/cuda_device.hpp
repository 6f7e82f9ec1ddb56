// The CUDA device (built only when the toolkit exists; else backend/detail/no_cuda_device.cpp): the
// compute kernels of compute.hpp on synthetic tensors of the scheduled shapes (cuBLAS
// BF16 GEMMs, cuBLASLt FP8 GEMMs for ops of dtype FP8 with their casts and scale update,
// attention as strided-batched GEMM + softmax kernel + GEMM, memory-bound kernels on
// buffers rotated beyond the L2 cache; FP8 jobs are refused below compute capability
// 8.9); NCCL collectives and p2p on the communicators of
// nccl_comms.hpp (one per group and data-parallel priority class, one per directed
// pipeline pair: schedules/nccl_order.hpp says why), each with its own CUDA stream —
// tensor/pipeline communication at the device's highest priority, data-parallel classes
// spread below it, compute at the lowest. A pair of CUDA events per op, recorded right
// around its enqueue and read back once at the end (M18). On a timeout the executor
// calls abort() once: every communicator is aborted (ncclCommAbort) and never used
// again; the executor reports what it waited for (M19).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/device.hpp"
#include "backend/rendezvous.hpp"

namespace twinscale::backend {

/// Copies `bytes` at `data` from rank 0 to every rank; `key` names the value (the Redis
/// store's key; MPI ignores it). Bounded by the run's timeout; throws BackendError.
using BroadcastFromRoot = std::function<void(void* data, size_t bytes, const std::string& key)>;

/// Number of CUDA devices this process sees (0 without a driver or GPU).
int cuda_device_count();

/// The CUDA runtime and NCCL this build was compiled against ("CUDA 13.0, NCCL 2.27.7"),
/// or that it has no CUDA device.
std::string cuda_build_versions();

/// Checks the NCCL library version, selects this rank's GPU (its index among the ranks
/// of its host, MPI_Comm_split_type SHARED; an error when the host has more ranks than
/// GPUs), creates the NCCL communicators and returns the device. Appends one InitPhase
/// per step to `phases`. Throws BackendError when no GPU is visible or NCCL
/// initialisation fails or exceeds `timeout_s` (every communicator made is aborted).
std::unique_ptr<Device> make_cuda_device(const schedules::Schedule& schedule, int64_t rank,
                                         const BroadcastFromRoot& broadcast, double epoch_steady_s, double timeout_s,
                                         std::vector<InitPhase>& phases);

} // namespace twinscale::backend
