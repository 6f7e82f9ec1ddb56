#include "sim/speed_variation.hpp"

#include <algorithm>
#include <cmath>

namespace twinscale::sim {

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double uniform_open(uint64_t& state) { // (0, 1)
  return (static_cast<double>(splitmix64(state) >> 11) + 0.5) / 9007199254740992.0;
}

} // namespace

double slowest_gpu_factor(int64_t gpus, double sigma, uint64_t seed) {
  if (!(sigma > 0) || gpus <= 0) return 1.0;
  uint64_t state = seed ^ 0x5EEDFAC70Bull;
  double worst = 0;
  constexpr double kTwoPi = 6.283185307179586;
  for (int64_t g = 0; g < gpus; g += 2) {
    const double r = std::sqrt(-2.0 * std::log(uniform_open(state)));
    const double a = kTwoPi * uniform_open(state);
    worst = std::max(worst, r * std::cos(a));
    if (g + 1 < gpus) worst = std::max(worst, r * std::sin(a));
  }
  return 1.0 + sigma * std::max(worst, -4.0);
}

} // namespace twinscale::sim
