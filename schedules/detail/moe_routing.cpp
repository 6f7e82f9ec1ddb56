// Routing imbalance of mixture-of-experts layers. Dirichlet(α·1): expert shares are
// normalised Gamma(α) draws (small α: a few experts take most tokens). Zipf(s): the
// expert of popularity rank j (a seeded random permutation assigns ranks) gets a share
// ∝ (j+1)^−s.
#include "schedules/detail/moe_routing.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace twinscale::schedules::detail {

namespace {

class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() { // splitmix64 (Steele, Lea, Flood 2014)
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; } // in (0, 1)
  double normal() {                                                                  // Box–Muller
    const double u = uniform(), v = uniform();
    constexpr double kTwoPi = 6.283185307179586;
    return std::sqrt(-2 * std::log(u)) * std::cos(kTwoPi * v);
  }
  double gamma(double alpha) { // Marsaglia & Tsang 2000; α < 1 via Gamma(α+1)·U^(1/α)
    if (alpha < 1) return gamma(alpha + 1) * std::pow(uniform(), 1 / alpha);
    const double d = alpha - 1.0 / 3, c = 1 / std::sqrt(9 * d);
    for (;;) {
      double x = 0, v = 0;
      do {
        x = normal();
        v = 1 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const double u = uniform();
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
    }
  }

private:
  uint64_t state_;
};

uint64_t mix(uint64_t h, int64_t v) {
  Rng r(h ^ (static_cast<uint64_t>(v) * 0xD6E8FEB86659FD93ull));
  return r.next();
}

std::vector<double> expert_shares(const ModelSpec& m, Rng& rng) {
  const auto E = static_cast<size_t>(m.experts);
  std::vector<double> p(E, 1.0 / static_cast<double>(E));
  if (m.routing == RoutingKind::Dirichlet) {
    for (double& x : p) x = rng.gamma(m.routing_alpha);
  } else if (m.routing == RoutingKind::Zipf) {
    std::vector<size_t> rank(E);
    std::iota(rank.begin(), rank.end(), size_t{0});
    for (size_t i = E; i > 1; --i) std::swap(rank[i - 1], rank[rng.next() % i]); // Fisher–Yates
    for (size_t i = 0; i < E; ++i) p[i] = std::pow(static_cast<double>(rank[i] + 1), -m.routing_exponent);
  }
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& x : p) x = total > 0 ? x / total : 1.0 / static_cast<double>(E);
  return p;
}

/// The expert popularities drawn for (iteration, micro-batch, layer).
std::vector<double> drawn_shares(const ModelSpec& m, int64_t iteration, int64_t micro_batch, int64_t layer) {
  Rng rng(mix(mix(mix(static_cast<uint64_t>(m.routing_seed), iteration), micro_batch), layer));
  return expert_shares(m, rng);
}

} // namespace

double mean_token_domains(const ModelSpec& m, int64_t ep, int64_t ep_node, int64_t max_domains, int64_t iteration,
                          int64_t micro_batch, int64_t layer) {
  if (m.experts <= 0 || ep_node <= 0 || ep % ep_node != 0) return 1;
  const std::vector<double> p = drawn_shares(m, iteration, micro_batch, layer); // balanced: all equal
  const int64_t domains = ep / ep_node;
  const int64_t per_domain = m.experts / ep * ep_node;
  double mean = 0;
  for (int64_t d = 0; d < domains; ++d) {
    double share = 0;
    for (int64_t e = d * per_domain; e < (d + 1) * per_domain; ++e) share += p[static_cast<size_t>(e)];
    mean += 1 - std::pow(std::max(0.0, 1 - share), static_cast<double>(m.top_k));
  }
  if (max_domains > 0) mean = std::min(mean, static_cast<double>(max_domains));
  return std::max(1.0, mean);
}

double hottest_rank_load(const ModelSpec& m, int64_t ep, int64_t iteration, int64_t micro_batch, int64_t layer) {
  if (m.experts <= 0) return 1;
  if (m.routing == RoutingKind::Balanced && m.capacity_factor == 0) return 1;
  std::vector<double> p = drawn_shares(m, iteration, micro_batch, layer);
  if (m.capacity_factor > 0) {
    const double cap = m.capacity_factor / static_cast<double>(m.experts);
    for (double& x : p) x = std::min(x, cap);
  }
  const int64_t per_rank = m.experts / ep;
  double hottest = 0;
  for (int64_t r = 0; r < ep; ++r) {
    double share = 0;
    for (int64_t e = r * per_rank; e < (r + 1) * per_rank; ++e) share += p[static_cast<size_t>(e)];
    hottest = std::max(hottest, share);
  }
  return hottest * static_cast<double>(ep);
}

} // namespace twinscale::schedules::detail
