// The plugin's one exported symbol (plugin.hpp): the table of the CUDA device's entry points.
#include "backend/cuda/plugin.hpp"

extern "C" __attribute__((visibility("default"))) const void* twinscale_cuda_plugin() {
  namespace cuda = twinscale::backend::cuda;
  static const cuda::PluginApi api{cuda::kPluginAbi, &cuda::device_count, &cuda::make_device, &cuda::make_probe_device};
  return &api;
}
