#include "faults/checkpoint_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "faults/error.hpp"

namespace twinscale::faults {

double young_interval_s(double delta, double m) { return std::sqrt(2.0 * delta * m); }

double daly_interval_s(double delta, double m) {
  if (delta >= 2.0 * m) return m;
  const double x = delta / (2.0 * m);
  return std::sqrt(2.0 * delta * m) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - delta;
}

double daly_expected_wall_s(double work, double tau, double delta, double r, double m) {
  return m * std::exp(r / m) * (std::exp((tau + delta) / m) - 1.0) * work / tau;
}

std::vector<double> geometric_intervals(double lo, double hi, int n) {
  if (!(lo > 0) || !(hi >= lo) || n < 1) throw FaultError("interval sweep: need 0 < lo ≤ hi and n ≥ 1 points");
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(n == 1 ? lo : lo * std::pow(hi / lo, static_cast<double>(i) / (n - 1)));
  return out;
}

TunerResult tune_checkpoint(const Campaign& base, const std::vector<double>& intervals) {
  if (intervals.empty()) throw FaultError("tune-checkpoint: no intervals to sweep");
  TunerResult r;
  r.checkpoint_s = base.checkpoint.blocking_s;
  const int64_t gpus = base.shape.tp * base.shape.dp * base.shape.pp;
  r.mtbf_s = base.model.interrupt_mtbf_s(gpus);
  r.young_s = young_interval_s(r.checkpoint_s, r.mtbf_s);
  r.daly_s = daly_interval_s(r.checkpoint_s, r.mtbf_s);
  for (size_t i = 0; i < intervals.size(); ++i) {
    const double tau = intervals[i];
    Campaign c = base; // base.on_seed_done reports intervals here, not the seeds of one
    c.on_seed_done = nullptr;
    c.checkpoint_interval_s = tau;
    if (base.on_seed_done) base.on_seed_done(static_cast<int64_t>(i), static_cast<int64_t>(intervals.size()));
    const CampaignSummary s = run_campaign(c);
    // Intervals are whole iterations: two requests that round alike are one point.
    if (!r.points.empty() && r.points.back().interval_s == s.checkpoint_interval_s) continue;
    TunerPoint p;
    p.interval_s = s.checkpoint_interval_s;
    p.ettr = s.ettr;
    std::vector<double> rec;
    for (const auto& run : s.runs) {
      p.ettr_by_seed.push_back(run.ettr());
      double sum = 0;
      for (double v : run.recovery_s) sum += v;
      rec.push_back(run.recovery_s.empty() ? 0.0 : sum / static_cast<double>(run.recovery_s.size()));
    }
    p.recovery_mean_s = mean_ci(rec);
    const double work = 1.0;
    p.daly_ettr = work / daly_expected_wall_s(work, p.interval_s, r.checkpoint_s, p.recovery_mean_s.mean, r.mtbf_s);
    r.points.push_back(std::move(p));
  }
  if (base.on_seed_done)
    base.on_seed_done(static_cast<int64_t>(intervals.size()), static_cast<int64_t>(intervals.size()));
  for (size_t i = 1; i < r.points.size(); ++i)
    if (r.points[i].ettr.mean > r.points[r.best].ettr.mean) r.best = i;
  const auto& best = r.points[r.best].ettr_by_seed;
  r.band_lo_s = r.band_hi_s = r.points[r.best].interval_s;
  for (auto& p : r.points) {
    std::vector<double> diff;
    for (size_t k = 0; k < best.size(); ++k) diff.push_back(best[k] - p.ettr_by_seed[k]);
    const MeanCi d = mean_ci(diff);
    p.in_band = d.mean - d.half_width <= 0;
    if (p.in_band) {
      r.band_lo_s = std::min(r.band_lo_s, p.interval_s);
      r.band_hi_s = std::max(r.band_hi_s, p.interval_s);
    }
  }
  // Open-ended where the band reaches the end of the grid: the optimum may lie beyond.
  r.bracket_lo_s = 0;
  r.bracket_hi_s = std::numeric_limits<double>::infinity();
  for (const auto& p : r.points) {
    if (p.in_band) continue;
    if (p.interval_s < r.band_lo_s) r.bracket_lo_s = std::max(r.bracket_lo_s, p.interval_s);
    if (p.interval_s > r.band_hi_s) r.bracket_hi_s = std::min(r.bracket_hi_s, p.interval_s);
  }
  return r;
}

} // namespace twinscale::faults
