// Checkpoint-interval tuning: sweep the interval through the campaign engine and compare
// the simulated optimum with Young's first-order formula √(2δM) and Daly's higher-order
// one (J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
// dumps", FGCS 22(3), 2006), where δ is the blocking checkpoint time and M the mean time
// between interruptions.
//
// How the sampling error of the simulated optimum is bounded: every interval runs the same
// seeds, and fault arrivals depend only on the seed (common random numbers), so ETTR
// differences between two intervals are paired per seed. An interval belongs to the
// optimum band when its ETTR is not significantly below the best one: the mean paired
// difference minus its 95 % Student-t half-width is ≤ 0. The band is the set of intervals
// the simulation cannot tell apart from the best; a formula "agrees within sampling error"
// when its interval lies inside the band.
#pragma once

#include <vector>

#include "faults/campaign.hpp"

namespace twinscale::faults {

/// Young (1974): τ = √(2 δ M).
double young_interval_s(double checkpoint_s, double mtbf_s);
/// Daly (2006), eq. (37): τ = √(2δM)·[1 + ⅓√(δ/2M) + ⅑(δ/2M)] − δ for δ < 2M, else M.
double daly_interval_s(double checkpoint_s, double mtbf_s);
/// Daly's expected wall time to complete `work_s` of work with exponential failures of
/// mean `mtbf_s`, interval τ, checkpoint δ and restart R (failures may strike during
/// checkpoints and restarts): M e^{R/M} (e^{(τ+δ)/M} − 1) · work / τ.
double daly_expected_wall_s(double work_s, double interval_s, double checkpoint_s, double restart_s, double mtbf_s);

/// Geometric grid of `n` intervals from `lo_s` to `hi_s` (inclusive).
std::vector<double> geometric_intervals(double lo_s, double hi_s, int n);

struct TunerPoint {
  double interval_s = 0;
  MeanCi ettr;
  MeanCi recovery_mean_s; // mean time fault → training resumes, per seed
  double daly_ettr = 0;   // work / Daly's expected wall time, R = recovery_mean_s
  bool in_band = false;   // not significantly worse than the best (see above)
  std::vector<double> ettr_by_seed;
};

struct TunerResult {
  std::vector<TunerPoint> points;
  size_t best = 0;                     // index of the highest mean ETTR
  double band_lo_s = 0, band_hi_s = 0; // smallest and largest interval in the band
  /// The grid's resolution around the band: the nearest out-of-band intervals below and
  /// above it (0 and ∞ where the band reaches the end of the grid). The optimum lies in (bracket_lo_s,
  /// bracket_hi_s); a formula is consistent with the simulation when its interval does.
  double bracket_lo_s = 0, bracket_hi_s = 0;
  double checkpoint_s = 0; // δ: blocking time per checkpoint
  double mtbf_s = 0;       // M: interruption MTBF of the model at the job's size
  double young_s = 0;
  double daly_s = 0;

  bool consistent(double interval_s) const { return interval_s > bracket_lo_s && interval_s < bracket_hi_s; }
};

/// Runs `base` at each interval (every interval ≥ the checkpoint time, else FaultError).
/// Intervals are rounded up to whole iterations; consecutive duplicates are dropped.
TunerResult tune_checkpoint(const Campaign& base, const std::vector<double>& intervals_s);

} // namespace twinscale::faults
