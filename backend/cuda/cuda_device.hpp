// The CUDA device (built only when the toolkit exists; else backend/detail/no_cuda_device.cpp): cuBLAS BF16
// GEMMs (cublasGemmEx) and attention as strided-batched GEMM + softmax kernel + GEMM on
// synthetic tensors of the scheduled shapes; memory-bound kernels from kernels.cu; NCCL
// collectives and grouped send/recv on non-blocking communicators (ncclConfig_t
// blocking = 0) made by ncclCommInitRankScalable (NCCL ≥ 2.23, else
// ncclCommInitRankConfig) then ncclCommSplit into TP, DP, PP and Embedding; one CUDA
// stream per schedule stream, communication streams at higher priority; a pair of CUDA
// events per op, read back once at the end (M18). On a timeout every communicator is
// aborted (ncclCommAbort) and the executor reports what it waited for (M19).
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

/// Selects this rank's GPU (local rank modulo the visible devices), creates the NCCL
/// communicators (world, then TP, DP, PP, Embedding by ncclCommSplit) and returns the
/// device. Appends one InitPhase per step to `phases`. Throws BackendError when no GPU
/// is visible or NCCL initialisation fails or exceeds `timeout_s`.
std::unique_ptr<Device> make_cuda_device(const schedules::Schedule& schedule, int64_t rank,
                                         const BroadcastFromRoot& broadcast, double epoch_steady_s,
                                         double timeout_s, std::vector<InitPhase>& phases);

} // namespace twinscale::backend
