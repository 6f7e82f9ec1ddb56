// The CPU device's side of the probe (backend/probe_device.hpp): fp32 kernels of
// detail::CpuKernels replayed as a run executes them, MPI transfers of fp32 elements on
// groups of consecutive ranks, progressed as the CPU device progresses its own
// (docs/backend.md "Probe").
#pragma once

#include <memory>
#include <optional>

#include "backend/probe.hpp"
#include "backend/probe_device.hpp"

namespace twinscale::backend::detail {

std::unique_ptr<ProbeDevice> make_cpu_probe_device(const schedules::Schedule& schedule, const ProbeOptions& options,
                                                   int rank, int world);
/// The executor → worker hand-off the CPU probe device saw between consecutive compute
/// ops of its replays (median, mean over ranks; collective); nullopt when `device` is
/// not the CPU probe device.
std::optional<double> cpu_hand_off_s(ProbeDevice& device);

} // namespace twinscale::backend::detail
