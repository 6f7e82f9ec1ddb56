// Helpers of the GPU tests: what a test case needs that this machine may lack. A case
// that cannot run calls TWINSCALE_SKIP (tests/skip.hpp) with the reason and returns; the
// cases after it still run.
#pragma once

#include <string>

#include "backend/cuda/cuda_device.hpp"
#include "tests/backend/mpi_helpers.hpp"

namespace twinscale::backend::test {

/// Why `what` cannot run here (fewer than `gpus` GPUs, or no mpirun when `mpirun`), or "".
inline std::string missing_for(const std::string& what, int gpus, bool mpirun) {
  const int have = cuda_device_count();
  if (have < gpus) return what + " needs " + std::to_string(gpus) + " GPUs; this machine has " + std::to_string(have);
  if (mpirun && !have_mpirun()) return what + " needs mpirun";
  return {};
}

} // namespace twinscale::backend::test
