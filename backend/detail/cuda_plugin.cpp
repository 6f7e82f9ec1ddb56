// The CUDA device's entry points in a build with the CUDA toolkit (backend/CMakeLists.txt
// compiles this file instead of no_cuda_device.cpp): each opens the CUDA plugin
// (backend/cuda/plugin.hpp) on first use, so the CUDA runtime, cuBLAS and NCCL are mapped
// only by the commands that ask for a CUDA device. The plugin is looked for at
// $TWINSCALE_CUDA_PLUGIN when set (and only there), else next to the running executable,
// else where this build wrote it.
#include <string>
#include <vector>

#include <cuda_runtime_api.h> // CUDART_VERSION: the macros only, no library is linked
#include <nccl.h>             // NCCL_MAJOR …

#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/cuda_probe.hpp"
#include "backend/cuda/plugin.hpp"
#include "backend/error.hpp"
#include "common/plugin.hpp"

namespace twinscale::backend {

namespace {

constexpr const char* kPluginFile = "libtwinscale_cuda.so";

/// The plugin, loaded once; throws BackendError (prefixed by `what`) when it cannot be.
const cuda::PluginApi& cuda_plugin(const std::string& what) {
  static const plugin::Opened loaded = plugin::open_plugin(
      kPluginFile, "TWINSCALE_CUDA_PLUGIN", TWINSCALE_CUDA_PLUGIN_PATH, cuda::kPluginEntry, cuda::kPluginAbi);
  if (loaded.table == nullptr)
    throw BackendError(what + ": cannot load the CUDA device plugin " + kPluginFile +
                       " (set TWINSCALE_CUDA_PLUGIN to its path, or valid here: --device cpu); tried:" + loaded.error);
  return *static_cast<const cuda::PluginApi*>(loaded.table);
}

} // namespace

int cuda_device_count() {
  try {
    return cuda_plugin("cuda_device_count").device_count();
  } catch (const BackendError&) { // no plugin: no usable CUDA device in this process
    return 0;
  }
}

std::string cuda_build_versions() {
  return "CUDA " + std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10) +
         ", NCCL " + std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH);
}

std::unique_ptr<Device> make_cuda_device(const schedules::Schedule& schedule, int64_t rank,
                                         const BroadcastFromRoot& broadcast, double epoch_steady_s, double timeout_s,
                                         std::vector<InitPhase>& phases) {
  return cuda_plugin("--device cuda").make_device(schedule, rank, broadcast, epoch_steady_s, timeout_s, phases);
}

std::unique_ptr<ProbeDevice> make_cuda_probe_device(const schedules::Schedule& schedule, const ProbeOptions& options,
                                                    int rank, int world) {
  return cuda_plugin("probe --device cuda").make_probe_device(schedule, options, rank, world);
}

} // namespace twinscale::backend
