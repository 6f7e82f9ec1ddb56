#include <catch2/catch.hpp>

#include "faults/checkpoint_tuner.hpp"
#include "faults/error.hpp"

using namespace twinscale::faults;

namespace {
constexpr double kMin = 60.0;

/// Daly's textbook setting: exponential failures of mean M, blocking checkpoint δ, restart
/// R, nothing else (instant detection, no diagnostics, no eviction, nothing to load).
Campaign daly_campaign(double mtbf_s, double delta_s, double restart_s, double duration_s, int64_t seeds) {
  Campaign c;
  c.shape = {1, 1, 1};
  c.model = exponential_model(mtbf_s, 1);
  c.recovery.name = "daly";
  c.recovery.detection.explicit_error_s = 0;
  c.recovery.diagnostics.duration_s = 0;
  c.recovery.diagnostics.false_positive_rate = 0;
  c.recovery.restart_s = restart_s;
  c.recovery.comm_init.store_op_s = 0;
  c.checkpoint.blocking_s = delta_s;
  c.checkpoint.persist_s = 0;
  c.checkpoint.load_s = 0;
  c.spec.duration_s = duration_s;
  c.spec.iteration_time_s = 1.0;
  c.spec.seeds = seeds;
  c.spec.seed = 42;
  return c;
}
} // namespace

TEST_CASE("tuner: Daly's published optima for his worked example within 1 %", "[faults][tuner]") {
  // Daly (2006): δ = 5 min, R = 10 min (R does not enter the optimum).
  CHECK(daly_interval_s(5 * kMin, 24 * 60 * kMin) / kMin == Approx(117).epsilon(0.01));
  CHECK(daly_interval_s(5 * kMin, 6 * 60 * kMin) / kMin == Approx(57).epsilon(0.01));
  CHECK(daly_interval_s(5 * kMin, 15 * kMin) / kMin == Approx(9.1).epsilon(0.01));
  // Young's first-order value, and Daly's rule τ = M when δ ≥ 2M.
  CHECK(young_interval_s(5 * kMin, 24 * 60 * kMin) / kMin == Approx(120));
  CHECK(daly_interval_s(40 * kMin, 15 * kMin) == Approx(15 * kMin));
}

TEST_CASE("tuner: simulated ETTR matches Daly's expected wall time for exponential failures", "[faults][tuner]") {
  const double m = 15 * kMin, delta = 5 * kMin, r = 10 * kMin;
  Campaign c = daly_campaign(m, delta, r, 2000 * m, 8);
  for (double tau : {6 * kMin, 9.1 * kMin, 20 * kMin}) {
    c.checkpoint_interval_s = tau;
    const auto s = run_campaign(c);
    const double analytic = 1.0 / daly_expected_wall_s(1.0, tau, delta, r, m);
    INFO("tau " << tau << " sim " << s.ettr.mean << " ± " << s.ettr.half_width << " analytic " << analytic);
    // Within the 95 % CI over seeds, plus 1 % for the first start-up and the end effect.
    CHECK(std::abs(s.ettr.mean - analytic) <= s.ettr.half_width + 0.01 * analytic);
  }
}

TEST_CASE("tuner: the simulated optimum agrees with Daly's within sampling error", "[faults][tuner]") {
  // M = 6 h, δ = 5 min: Daly's optimum 56.7 min. Common random numbers, 12 seeds of 200 M.
  const double m = 6 * 60 * kMin, delta = 5 * kMin, r = 10 * kMin;
  Campaign c = daly_campaign(m, delta, r, 200 * m, 12);
  const auto result = tune_checkpoint(c, geometric_intervals(15 * kMin, 240 * kMin, 13));
  CHECK(result.daly_s / kMin == Approx(56.7).epsilon(0.01));
  INFO("band [" << result.band_lo_s / kMin << ", " << result.band_hi_s / kMin << "] min, best "
                << result.points[result.best].interval_s / kMin);
  CHECK(result.consistent(result.daly_s));
  CHECK(result.bracket_lo_s < result.band_lo_s);
  CHECK(result.band_lo_s <= result.daly_s);
  CHECK(result.daly_s <= result.band_hi_s);
  // The band is informative: it excludes the ends of a 16× sweep.
  CHECK_FALSE(result.points.front().in_band);
  CHECK_FALSE(result.points.back().in_band);
}

TEST_CASE("tuner: intervals shorter than the checkpoint are errors", "[faults][tuner][errors]") {
  Campaign c = daly_campaign(3600, 300, 60, 86400, 1);
  CHECK_THROWS_WITH(tune_checkpoint(c, {120.0, 600.0}),
                    Catch::Contains("shorter than the checkpoint itself") && Catch::Contains("≥ 300.0 s"));
  CHECK_THROWS_AS(geometric_intervals(0, 10, 3), FaultError);
}
