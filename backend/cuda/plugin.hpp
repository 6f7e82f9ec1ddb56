// The CUDA device as a plugin: backend/cuda/ is built into its own shared library
// (libtwinscale_cuda.so, next to the `twinscale` binary), the only part of the build that
// links the CUDA runtime, cuBLAS and NCCL. The rest of the program reaches it through
// cuda_device.hpp and cuda_probe.hpp, whose functions (backend/detail/cuda_plugin.cpp)
// open the plugin with dlopen the first time a command asks for a CUDA device. Commands
// that never do (--help, simulate, sweep, the CPU device) never map those libraries.
//
// The plugin exports one C symbol, kPluginEntry, returning a PluginApi of the same build
// (kPluginAbi guards against a plugin of another build given by TWINSCALE_CUDA_PLUGIN).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/cuda_probe.hpp"

namespace twinscale::backend::cuda {

/// Bumped whenever PluginApi or a type it passes changes.
inline constexpr int kPluginAbi = 1;
/// The plugin's one exported symbol: `extern "C" const void* twinscale_cuda_plugin()`, the
/// address of its PluginApi (common/plugin.hpp opens it).
inline constexpr const char* kPluginEntry = "twinscale_cuda_plugin";

struct PluginApi {
  int abi = kPluginAbi; // first: common/plugin.hpp reads it
  int (*device_count)() = nullptr;
  std::unique_ptr<Device> (*make_device)(const schedules::Schedule& schedule, int64_t rank,
                                         const BroadcastFromRoot& broadcast, double epoch_steady_s, double timeout_s,
                                         std::vector<InitPhase>& phases) = nullptr;
  std::unique_ptr<ProbeDevice> (*make_probe_device)(const schedules::Schedule& schedule, const ProbeOptions& options,
                                                    int rank, int world) = nullptr;
};

// The plugin's implementations (backend/cuda/), behind the public entry points of
// cuda_device.hpp and cuda_probe.hpp, with the same contracts.
int device_count();
std::unique_ptr<Device> make_device(const schedules::Schedule& schedule, int64_t rank,
                                    const BroadcastFromRoot& broadcast, double epoch_steady_s, double timeout_s,
                                    std::vector<InitPhase>& phases);
std::unique_ptr<ProbeDevice> make_probe_device(const schedules::Schedule& schedule, const ProbeOptions& options,
                                               int rank, int world);

} // namespace twinscale::backend::cuda
