// Private: the deterministic mixing function behind ECMP choices and seeded shuffles.
#pragma once

#include <cstdint>

namespace twinscale::topology::detail {

/// SplitMix64 finaliser: a bijective 64-bit mix with good avalanche.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// Hash of a flow's identity at one switch, as a switch's ECMP hash over the 5-tuple
/// with a per-switch seed would be, in two parts: the flow's own (the same at every switch
/// of its path, mixed once a route) and the switch's, flow_hash_at(flow_hash_prefix(src,
/// dst, flow id, seed), switch vertex).
inline uint64_t flow_hash_prefix(uint64_t src, uint64_t dst, uint64_t flow_id, uint64_t seed) {
  uint64_t h = mix64(seed ^ 0x5bd1e9955bd1e995ULL);
  h = mix64(h ^ src);
  h = mix64(h ^ (dst * 0x9e3779b97f4a7c15ULL));
  return mix64(h ^ flow_id);
}
inline uint64_t flow_hash_at(uint64_t prefix, uint64_t switch_vertex) {
  return mix64(prefix ^ (switch_vertex + 0x632be59bd9b4e019ULL));
}

/// A seeded random generator (SplitMix64 stream) for deterministic shuffles.
class SplitMix {
public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t next() { return mix64(state_++ * 0x9e3779b97f4a7c15ULL); }
  /// Uniform in [0, n); n > 0 (Lemire-style rejection-free multiply-shift).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<__uint128_t>(next()) * n) >> 64); }

private:
  uint64_t state_;
};

} // namespace twinscale::topology::detail
