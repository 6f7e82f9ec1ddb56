#include "backend/detail/cache_flush.hpp"

#include <cstdint>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace twinscale::backend::detail {

namespace {
constexpr size_t kLine = 64; // the smallest cache line of the supported architectures
}

bool cache_flush_supported() {
#if defined(__x86_64__) || defined(_M_X64) || defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

void flush_from_caches(const void* data, size_t bytes) {
  if (data == nullptr || bytes == 0) return;
  auto p = reinterpret_cast<uintptr_t>(data) & ~(uintptr_t{kLine} - 1);
  const auto end = reinterpret_cast<uintptr_t>(data) + bytes;
#if defined(__x86_64__) || defined(_M_X64)
  for (; p < end; p += kLine) _mm_clflush(reinterpret_cast<const void*>(p));
  _mm_mfence();
#elif defined(__aarch64__)
  for (; p < end; p += kLine) asm volatile("dc civac, %0" : : "r"(p) : "memory");
  asm volatile("dsb ish" : : : "memory");
#else
  (void)p;
  (void)end;
#endif
}

} // namespace twinscale::backend::detail
