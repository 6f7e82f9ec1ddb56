// The CUDA device's side of `twinscale probe --device cuda` (backend/probe_device.hpp;
// one driver, two devices). Declared without CUDA types: without the toolkit,
// backend/detail/no_cuda_device.cpp answers with an error.
//  - Kernels: the run's own (cuda/compute.hpp: cuBLAS BF16 and cuBLASLt FP8 GEMMs,
//    attention, memory-bound and FP8 cast kernels) on one stream per schedule stream, as
//    the CUDA device of `run`; each op is enqueued after the previous one finished (a
//    cross-stream event wait) between its own pair of CUDA events, on its stream.
//  - Transfers: NCCL in bf16 on communicators split from a world communicator as the
//    run's are (cuda/nccl_comms.hpp), one per group size of consecutive ranks, each with
//    its own stream; timed by CUDA events on that stream around the NCCL call; every
//    received element checked on the device against the pattern its senders wrote.
// Throws BackendError when no GPU is visible, a host has more ranks than GPUs, the job
// has FP8 GEMMs on a GPU below compute capability 8.9, or NCCL fails.
#pragma once

#include <memory>

#include "backend/probe.hpp"
#include "backend/probe_device.hpp"

namespace twinscale::backend {

std::unique_ptr<ProbeDevice> make_cuda_probe_device(const schedules::Schedule& schedule, const ProbeOptions& options,
                                                    int rank, int world);

} // namespace twinscale::backend
