// Writes back and invalidates a memory range in every cache level (x86-64: CLFLUSH;
// AArch64: DC CIVAC), so that the next access misses as it would after a run's compute
// had streamed its own working set through the caches. The probe uses it to measure a
// transfer on buffers as cold as the CPU device's are when a run posts them
// (docs/backend.md "Probe").
#pragma once

#include <cstddef>

namespace twinscale::backend::detail {

/// False where the architecture has no user-level cache-line flush (the call is then a
/// no-op and the probe says so).
bool cache_flush_supported();
void flush_from_caches(const void* data, size_t bytes);

} // namespace twinscale::backend::detail
