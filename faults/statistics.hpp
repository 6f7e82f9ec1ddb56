// Small, deterministic statistics for campaign summaries: mean with a Student-t
// confidence interval over seeds, and nearest-rank quantiles.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace twinscale::faults {

/// Two-sided 97.5 % quantile of Student's t with `dof` degrees of freedom (table up to
/// 30, then the normal value with a 1/dof correction; error < 0.5 %).
inline double t_975(long dof) {
  static const double table[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201, 2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
                                 2.074, 2.069,  2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof < 1) return 0;
  if (dof <= 30) return table[dof];
  return 1.959964 + 2.4 / static_cast<double>(dof);
}

struct MeanCi {
  double mean = 0;
  double half_width = 0; // 95 % CI = mean ± half_width (0 with one sample)
  double lo() const { return mean - half_width; }
  double hi() const { return mean + half_width; }
};

inline MeanCi mean_ci(const std::vector<double>& x) {
  MeanCi r;
  if (x.empty()) return r;
  double sum = 0;
  for (double v : x) sum += v;
  r.mean = sum / static_cast<double>(x.size());
  if (x.size() < 2) return r;
  double ss = 0;
  for (double v : x) ss += (v - r.mean) * (v - r.mean);
  const double sd = std::sqrt(ss / static_cast<double>(x.size() - 1));
  r.half_width = t_975(static_cast<long>(x.size()) - 1) * sd / std::sqrt(static_cast<double>(x.size()));
  return r;
}

/// Nearest-rank quantile q ∈ [0, 1] (0 for an empty sample). Sorts a copy.
inline double quantile(std::vector<double> x, double q) {
  if (x.empty()) return 0;
  std::sort(x.begin(), x.end());
  const double rank = std::ceil(q * static_cast<double>(x.size()));
  size_t i = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return x[std::min(i, x.size() - 1)];
}

} // namespace twinscale::faults
