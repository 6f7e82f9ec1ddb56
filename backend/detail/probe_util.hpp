// Small helpers shared by the probe's parts (probe.cpp, cpu_probe_device.cpp,
// probe_overlap.cpp): the host's steady clock, the median of samples, MPI return codes.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <mpi.h>

#include "backend/error.hpp"

namespace twinscale::backend::detail {

inline double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The median of `v` (the mean of the middle two for an even count; 0 when empty).
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Throws BackendError "`who`: `what` failed (MPI error rc)" unless rc is MPI_SUCCESS.
inline void check_mpi(int rc, const char* who, const char* what) {
  if (rc != MPI_SUCCESS)
    throw BackendError(std::string(who) + ": " + what + " failed (MPI error " + std::to_string(rc) + ")");
}

} // namespace twinscale::backend::detail
