#include "sim/speed_variation.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/error.hpp"

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
  return slowest_gpu_factor(gpus, sigma, seed, {});
}

double slowest_gpu_factor(int64_t gpus, double sigma, uint64_t seed, const SlowHosts& slow) {
  if (!(slow.fraction >= 0 && slow.fraction <= 1))
    throw SimError("speed variation: slow-host fraction is " + std::to_string(slow.fraction) +
                   "; must be in [0, 1] (--slow-host-fraction)");
  if (!(slow.factor >= 1) || !std::isfinite(slow.factor))
    throw SimError("speed variation: slow-host factor is " + std::to_string(slow.factor) +
                   "; must be a finite time multiplier ≥ 1 (--slow-host-factor)");
  if (slow.gpus_per_host < 1)
    throw SimError("speed variation: gpus per host is " + std::to_string(slow.gpus_per_host) + "; must be ≥ 1");
  if (gpus <= 0 || !(sigma > 0 || slow.fraction > 0)) return 1.0;
  uint64_t state = seed ^ 0x5EEDFAC70Bull;
  const bool hosts = slow.fraction > 0 && slow.factor > 1;
  const int64_t host_count = (gpus + slow.gpus_per_host - 1) / slow.gpus_per_host;
  // z of every GPU first (the same stream as without slow hosts), then one draw per host.
  std::vector<double> z;
  if (sigma > 0) {
    z.reserve(static_cast<size_t>(gpus));
    constexpr double kTwoPi = 6.283185307179586;
    for (int64_t g = 0; g < gpus; g += 2) {
      const double r = std::sqrt(-2.0 * std::log(uniform_open(state)));
      const double a = kTwoPi * uniform_open(state);
      z.push_back(std::max(r * std::cos(a), -4.0));
      if (g + 1 < gpus) z.push_back(std::max(r * std::sin(a), -4.0));
    }
  }
  double worst = 1; // as before: a job is never faster than its nominal GPU
  for (int64_t h = 0; h < host_count; ++h) {
    const double host = hosts && uniform_open(state) < slow.fraction ? slow.factor : 1.0;
    for (int64_t g = h * slow.gpus_per_host; g < std::min(gpus, (h + 1) * slow.gpus_per_host); ++g) {
      const double x = sigma > 0 ? 1.0 + sigma * z[static_cast<size_t>(g)] : 1.0;
      worst = std::max(worst, x * host);
    }
  }
  return worst;
}

} // namespace twinscale::sim
