// The CUDA device's entry points in a build without the CUDA toolkit (backend/CMakeLists.txt
// compiles this file instead of backend/cuda/ when TWINSCALE_WITH_CUDA is off): no device
// is visible, and asking for one is a clear error rather than a missing symbol.
#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/cuda_probe.hpp"
#include "backend/error.hpp"

namespace twinscale::backend {

int cuda_device_count() { return 0; }

std::string cuda_build_versions() { return "no CUDA device (built without the CUDA toolkit)"; }

std::unique_ptr<Device> make_cuda_device(const schedules::Schedule&, int64_t, const BroadcastFromRoot&, double, double,
                                         std::vector<InitPhase>&) {
  throw BackendError(
      "--device cuda: this build has no CUDA device (no CUDA toolkit at configure time); valid here: --device cpu");
}

std::unique_ptr<ProbeDevice> make_cuda_probe_device(const schedules::Schedule&, const ProbeOptions&, int, int) {
  throw BackendError("probe --device cuda: this build has no CUDA device (no CUDA toolkit at configure time); valid "
                     "here: --device cpu");
}

} // namespace twinscale::backend
