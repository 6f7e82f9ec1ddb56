// The `.tstrace` file's building blocks (docs/trace-format.md, "Binary trace"), shared by
// the writer (binary_trace_writer.cpp) and the reader (binary_trace.cpp): the header,
// the checks, and the integer codings.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace twinscale::schedules::detail {

inline constexpr char kMagic[8] = {'T', 'W', 'S', 'T', 'R', 'A', 'C', 'E'};
inline constexpr uint64_t kHeaderBytes = 64;
inline constexpr int64_t kMaxNs = int64_t{1} << 62;

struct Header {
  char magic[8];
  uint32_t version, schema;
  uint64_t world, meta_offset, meta_bytes, file_bytes, meta_hash, events;
};
static_assert(sizeof(Header) == kHeaderBytes);

inline uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/// The check of an event chunk: word-wise multiply-xor (≈ 0.1 ns a byte, so a 12,288-rank
/// trace's 2 GB are checked in the time the events are decoded).
inline uint64_t chunk_hash(const uint8_t* p, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  uint64_t w = 0;
  std::memcpy(&w, p + i, n - i);
  h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 29);
}

inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

/// Writes `v` as a varint at `p` (at most 10 bytes); returns the end.
inline uint8_t* put_varint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

inline void put_varint(std::vector<uint8_t>& out, uint64_t v) {
  uint8_t b[10];
  out.insert(out.end(), b, put_varint(b, v));
}

/// false when the bytes end or the varint is longer than 10 bytes
inline bool get_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    const uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

inline void put_f64(std::vector<uint8_t>& out, double v) {
  uint8_t b[8];
  std::memcpy(b, &v, 8);
  out.insert(out.end(), b, b + 8);
}

/// std::llround(s × 1e9) (halves away from zero) without the library call, for
/// |s × 1e9| < 2^62 (the writer checks): the truncation and the fraction left are exact.
inline int64_t to_ns(double s) {
  const double x = s * 1e9;
  const auto whole = static_cast<int64_t>(x);
  const double fraction = x - static_cast<double>(whole);
  return whole + (fraction >= 0.5 ? 1 : 0) - (fraction <= -0.5 ? 1 : 0);
}

} // namespace twinscale::schedules::detail
