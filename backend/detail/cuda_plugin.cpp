// The CUDA device's entry points in a build with the CUDA toolkit (backend/CMakeLists.txt
// compiles this file instead of no_cuda_device.cpp): each opens the CUDA plugin
// (backend/cuda/plugin.hpp) on first use, so the CUDA runtime, cuBLAS and NCCL are mapped
// only by the commands that ask for a CUDA device. The plugin is looked for at
// $TWINSCALE_CUDA_PLUGIN when set (and only there), else next to the running executable,
// else where this build wrote it.
#include <dlfcn.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

#include <cuda_runtime_api.h> // CUDART_VERSION: the macros only, no library is linked
#include <nccl.h>             // NCCL_MAJOR …

#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/cuda_probe.hpp"
#include "backend/cuda/plugin.hpp"
#include "backend/error.hpp"

namespace twinscale::backend {

namespace {

constexpr const char* kPluginFile = "libtwinscale_cuda.so";

struct LoadedPlugin {
  const cuda::PluginApi* api = nullptr;
  std::string error; // why none was loaded: each place tried and what failed there
};

std::string executable_dir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  const std::string exe(buf, static_cast<size_t>(n));
  const size_t slash = exe.rfind('/');
  return slash == std::string::npos ? std::string() : exe.substr(0, slash);
}

std::vector<std::string> candidates() {
  if (const char* env = std::getenv("TWINSCALE_CUDA_PLUGIN"); env != nullptr && *env != '\0') return {env};
  std::vector<std::string> out;
  if (const std::string dir = executable_dir(); !dir.empty()) out.push_back(dir + "/" + kPluginFile);
  out.emplace_back(TWINSCALE_CUDA_PLUGIN_PATH);
  return out;
}

/// Opens the first candidate that loads and yields a plugin of this build.
LoadedPlugin load_plugin() {
  LoadedPlugin p;
  for (const std::string& path : candidates()) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      p.error += "\n  " + path + ": " + (why ? why : "cannot be opened");
      continue;
    }
    using Entry = const cuda::PluginApi* (*)();
    const auto entry = reinterpret_cast<Entry>(::dlsym(handle, cuda::kPluginEntry));
    const cuda::PluginApi* api = entry ? entry() : nullptr;
    if (api == nullptr || api->abi != cuda::kPluginAbi) {
      p.error += "\n  " + path + ": not a CUDA plugin of this build (" +
                 (api ? "interface " + std::to_string(api->abi) + ", expected " + std::to_string(cuda::kPluginAbi)
                      : std::string("no ") + cuda::kPluginEntry) +
                 ")";
      ::dlclose(handle);
      continue;
    }
    p.api = api; // kept open for the life of the process
    p.error.clear();
    return p;
  }
  return p;
}

/// The plugin, loaded once; throws BackendError (prefixed by `what`) when it cannot be.
const cuda::PluginApi& plugin(const std::string& what) {
  static const LoadedPlugin loaded = load_plugin();
  if (loaded.api == nullptr)
    throw BackendError(what + ": cannot load the CUDA device plugin " + kPluginFile +
                       " (set TWINSCALE_CUDA_PLUGIN to " +
                       "its path, or valid here: --device cpu); tried:" + loaded.error);
  return *loaded.api;
}

} // namespace

int cuda_device_count() {
  try {
    return plugin("cuda_device_count").device_count();
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
  return plugin("--device cuda").make_device(schedule, rank, broadcast, epoch_steady_s, timeout_s, phases);
}

std::unique_ptr<ProbeDevice> make_cuda_probe_device(const schedules::Schedule& schedule, const ProbeOptions& options,
                                                    int rank, int world) {
  return plugin("probe --device cuda").make_probe_device(schedule, options, rank, world);
}

} // namespace twinscale::backend
