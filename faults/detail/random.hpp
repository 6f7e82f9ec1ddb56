// Portable sampling: std::mt19937_64 is specified bit for bit by the standard, the
// std::*_distribution classes are not, so every draw goes through inverse CDFs here.
// Same seed → same numbers with any standard library.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace twinscale::faults::detail {

/// splitmix64: decorrelates seeds (seed, stream) before they reach the Mersenne twister.
inline uint64_t mix_seed(uint64_t seed, uint64_t stream) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
public:
  Rng(uint64_t seed, uint64_t stream) : gen_(mix_seed(seed, stream)) {}
  /// Uniform in the open interval (0, 1): 53 random bits, never 0 or 1.
  double uniform() { return (static_cast<double>(gen_() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
  bool bernoulli(double p) { return uniform() < p; }
  /// Exponential with the given mean.
  double exponential(double mean) { return -mean * std::log(uniform()); }
  /// Weibull with shape k and scale λ: λ (−ln U)^{1/k}.
  double weibull(double shape, double scale) { return scale * std::pow(-std::log(uniform()), 1.0 / shape); }

private:
  std::mt19937_64 gen_;
};

/// Weibull scale giving mean `mean` for shape k: mean / Γ(1 + 1/k).
inline double weibull_scale_for_mean(double mean, double shape) { return mean / std::tgamma(1.0 + 1.0 / shape); }

} // namespace twinscale::faults::detail
