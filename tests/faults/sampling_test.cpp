#include <catch2/catch.hpp>

#include "faults/detail/random.hpp"
#include "faults/statistics.hpp"

using namespace twinscale::faults;

TEST_CASE("sampling: inverse-CDF draws have the right means and are reproducible", "[faults][sampling]") {
  detail::Rng a(7, 1), b(7, 1), c(7, 2);
  CHECK(a.uniform() == b.uniform());
  CHECK(a.uniform() != c.uniform());
  const int n = 200000;
  double sum_e = 0, sum_w = 0, sum_w2 = 0, lo = 1, hi = 0;
  detail::Rng r(123, 0);
  const double scale = detail::weibull_scale_for_mean(100.0, 0.7);
  for (int i = 0; i < n; ++i) {
    const double u = r.uniform();
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum_e += r.exponential(100.0);
    sum_w += r.weibull(0.7, scale);
    sum_w2 += r.weibull(1.0, 100.0);
  }
  CHECK(lo > 0);
  CHECK(hi < 1);
  // Standard error of the mean: σ/√n ≈ 0.22 % (exponential), ≈ 0.33 % (Weibull k = 0.7).
  CHECK(sum_e / n == Approx(100.0).epsilon(0.01));
  CHECK(sum_w / n == Approx(100.0).epsilon(0.015));
  CHECK(sum_w2 / n == Approx(100.0).epsilon(0.01));
}

TEST_CASE("statistics: t confidence intervals and nearest-rank quantiles", "[faults][sampling]") {
  const auto m = mean_ci({1, 2, 3, 4, 5});
  CHECK(m.mean == 3);
  CHECK(m.half_width == Approx(2.776 * std::sqrt(2.5) / std::sqrt(5.0)));
  CHECK(mean_ci({4}).half_width == 0);
  CHECK(quantile({5, 1, 4, 2, 3}, 0.5) == 3);
  CHECK(quantile({5, 1, 4, 2, 3}, 0.99) == 5);
  CHECK(quantile({}, 0.5) == 0);
  CHECK(t_975(200) == Approx(1.972).epsilon(0.002));
}
