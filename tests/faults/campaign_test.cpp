#include <catch2/catch.hpp>

#include <cmath>

#include "faults/campaign.hpp"
#include "faults/error.hpp"

using namespace twinscale::faults;

namespace {
double st(const CampaignRun& r, RunState s) { return r.time_by_state_s[static_cast<size_t>(s)]; }

FaultCategorySpec category(FaultEffect effect, DetectionSignal signal, bool evict, double diagnosable) {
  FaultCategorySpec c;
  c.name = "test";
  c.category = FaultCategory::Gpu;
  c.rate_per_gpu_hour = 1e-9; // irrelevant: scripted
  c.effect = effect;
  c.detection = signal;
  c.needs_eviction = evict;
  c.diagnosable = diagnosable;
  return c;
}

/// τ = 100 s of work, δ = 10 s blocking, R = 5 s restart, detection 7 s (explicit), diagnosis 3 s,
/// load 2 s, no persist stage; faults scripted.
Campaign scripted(std::vector<ScriptedFault> faults, FaultCategorySpec cat) {
  Campaign c;
  c.shape = {1, 1, 1};
  c.model.name = "scripted";
  c.model.categories = {cat};
  c.recovery.name = "test";
  c.recovery.detection.explicit_error_s = 7;
  c.recovery.diagnostics.duration_s = 3;
  c.recovery.diagnostics.false_negative_rate = 0;
  c.recovery.diagnostics.false_positive_rate = 0;
  c.recovery.restart_s = 5;
  c.recovery.comm_init.store_op_s = 0;
  c.checkpoint_interval_s = 100;
  c.checkpoint = {10, 0, 2};
  c.spec.duration_s = 2000;
  c.spec.iteration_time_s = 1;
  c.spec.scripted_faults = std::move(faults);
  return c;
}

void check_sums_to_wall(const CampaignRun& r, double wall) {
  CHECK(r.wall_s() == Approx(wall).epsilon(1e-9));
  for (double v : r.time_by_state_s) CHECK(v >= -1e-9);
}
} // namespace

TEST_CASE("campaign: without faults ETTR is the checkpoint duty cycle", "[faults][campaign]") {
  auto c = scripted({{1e9, 0}}, category(FaultEffect::Interrupt, DetectionSignal::ExplicitError, false, 0));
  const auto s = run_campaign(c);
  const auto& r = s.runs[0];
  // 5 s start, then cycles of 100 s work + 10 s stall: 1995 s = 18 cycles (1980 s) + 15 s work.
  CHECK(st(r, RunState::Training) == Approx(18 * 100 + 15));
  CHECK(st(r, RunState::CheckpointStall) == Approx(18 * 10));
  CHECK(st(r, RunState::RestartInit) == Approx(5));
  CHECK(r.checkpoints_durable == 18);
  CHECK(r.ettr() == Approx(1815.0 / 2000.0));
  check_sums_to_wall(r, 2000);
}

TEST_CASE("campaign: one interruption costs detection, diagnosis, restart, load and lost work", "[faults][campaign]") {
  // 0–5 start; work to 100 at 105; stall to 115; work to 200 at 215; stall to 225;
  // fault at 260 with work 235 → 35 s lost; 7 + 3 + 0 + 5 + 2 = 17 s to recover.
  auto c = scripted({{260, 0}}, category(FaultEffect::Interrupt, DetectionSignal::ExplicitError, false, 0));
  const auto s = run_campaign(c);
  const auto& r = s.runs[0];
  CHECK(r.interruptions == 1);
  CHECK(r.lost_work_s == Approx(35));
  REQUIRE(r.recovery_s.size() == 1);
  CHECK(r.recovery_s[0] == Approx(17));
  CHECK(st(r, RunState::Detection) == Approx(7));
  CHECK(st(r, RunState::Diagnosis) == Approx(3));
  CHECK(st(r, RunState::RestartInit) == Approx(10));
  CHECK(st(r, RunState::CheckpointLoad) == Approx(2));
  CHECK(st(r, RunState::Replay) == Approx(35));
  check_sums_to_wall(r, 2000);
  CHECK(s.recovery_median_s == Approx(17));
}

TEST_CASE("campaign: a failure before the persist stage ends loses that checkpoint (M16)", "[faults][campaign]") {
  auto c = scripted({{140, 0}}, category(FaultEffect::Interrupt, DetectionSignal::ExplicitError, false, 0));
  c.checkpoint.persist_s = 50; // checkpoint at work 100 copied by 115, durable at 165
  auto r = run_campaign(c).runs[0];
  CHECK(r.checkpoints_lost == 1);
  CHECK(r.lost_work_s == Approx(125)); // back to work 0
  c.spec.scripted_faults = {{170, 0}}; // after it is durable: only 55 s lost
  r = run_campaign(c).runs[0];
  CHECK(r.checkpoints_lost == 0);
  CHECK(r.lost_work_s == Approx(55));
}

TEST_CASE("campaign: a missed fault strikes again until escalation finds it (M15)", "[faults][campaign]") {
  auto cat = category(FaultEffect::Interrupt, DetectionSignal::ExplicitError, true, 0.0);
  auto c = scripted({{260, 0}}, cat);
  c.recovery.diagnostics.escalate_after = 2;
  c.recovery.diagnostics.escalation_s = 100;
  c.recovery.diagnostics.missed_fault_recurrence_s = 50;
  c.recovery.replacement.warm_spares = 0;
  c.recovery.replacement.cold_replacement_s = 30;
  const auto r = run_campaign(c).runs[0];
  CHECK(r.interruptions == 3);
  CHECK(r.repeat_interruptions == 2);
  CHECK(r.missed_diagnoses == 2);
  CHECK(r.evictions == 1);
  CHECK(r.cold_replacements == 1);
  CHECK(st(r, RunState::Replacement) == Approx(30));
  CHECK(st(r, RunState::Diagnosis) == Approx(3 + 3 + 100));
  check_sums_to_wall(r, 2000);
}

TEST_CASE("campaign: warm spares replace evicted nodes faster than cold replacement", "[faults][campaign]") {
  auto cat = category(FaultEffect::Interrupt, DetectionSignal::MissedHeartbeat, true, 1.0);
  auto c = scripted({{260, 0}, {800, 0}}, cat);
  c.recovery.detection.heartbeat_period_s = 10;
  c.recovery.detection.heartbeat_misses = 3;
  c.recovery.replacement.warm_spares = 1;
  c.recovery.replacement.spare_swap_s = 20;
  c.recovery.replacement.cold_replacement_s = 600;
  c.recovery.replacement.repair_s = 1e6; // the spare does not come back in this run
  c.spec.duration_s = 5000;
  const auto r = run_campaign(c).runs[0];
  REQUIRE(r.recovery_s.size() == 2);
  CHECK(r.recovery_s[0] == Approx(30 + 3 + 20 + 5 + 2));
  CHECK(r.recovery_s[1] == Approx(30 + 3 + 600 + 5 + 2));
  CHECK(r.cold_replacements == 1);
}

TEST_CASE("campaign: link flaps stall or fail by the retransmit limit (M13)", "[faults][campaign]") {
  auto cat = category(FaultEffect::Outage, DetectionSignal::ExplicitError, false, 0.0);
  cat.duration_s = 3;
  auto c = scripted({{260, 0}}, cat);
  c.recovery.retransmit.timeout_per_retry_s = RetransmitPolicy::ib_timeout_s(20); // 4.3 s × 7
  auto r = run_campaign(c).runs[0];
  CHECK(r.interruptions == 0);
  CHECK(r.stalls == 1);
  CHECK(st(r, RunState::NetworkStall) == Approx(3));
  check_sums_to_wall(r, 2000);
  c.recovery.retransmit = RetransmitPolicy{}; // NCCL_IB_TIMEOUT 14: 0.47 s
  r = run_campaign(c).runs[0];
  CHECK(r.interruptions == 1);
  CHECK(r.stalls == 0);
  REQUIRE(r.recovery_s.size() == 1);
  CHECK(r.recovery_s[0] == Approx(c.recovery.retransmit.tolerated_outage_s() + 7 + 3 + 5 + 2));
}

TEST_CASE("campaign: a straggler slows the job for its duration", "[faults][campaign]") {
  auto cat = category(FaultEffect::Slowdown, DetectionSignal::None, false, 0.0);
  cat.duration_s = 100;
  cat.slowdown = 0.5;
  auto c = scripted({{20, 0}}, cat);
  const auto r = run_campaign(c).runs[0];
  CHECK(st(r, RunState::Slowdown) == Approx(50));
  CHECK(r.interruptions == 0);
  check_sums_to_wall(r, 2000);
}

TEST_CASE("campaign: silent corruption rolls back past the checkpoints taken after it", "[faults][campaign]") {
  auto cat = category(FaultEffect::Interrupt, DetectionSignal::None, true, 1.0);
  auto c = scripted({{260, 0}}, cat);
  c.recovery.detection.silent_s = 300; // noticed at 560
  const auto r = run_campaign(c).runs[0];
  // Durable checkpoint at 260: work 200. At 560 the work is 235 + (560 − 260) − 3 stalls·10
  // (checkpoints at work 300, 400, 500 start at 325, 435, 545 wall) = 505: 305 lost, and
  // the three checkpoints taken after the corruption are not used.
  CHECK(r.interruptions == 1);
  CHECK(r.lost_work_s == Approx(505 - 200));
  check_sums_to_wall(r, 2000);
}

TEST_CASE("campaign: random campaigns are deterministic per seed and sum to the wall time", "[faults][campaign]") {
  Campaign c;
  c.shape = {8, 96, 16}; // 12,288 GPUs
  c.model.name = "two";
  auto a = category(FaultEffect::Interrupt, DetectionSignal::ExplicitError, true, 0.9);
  a.rate_per_gpu_hour = 7e-6;
  auto b = category(FaultEffect::Outage, DetectionSignal::ExplicitError, false, 0.0);
  b.rate_per_gpu_hour = 2e-6;
  b.duration_s = 2;
  b.duration_distribution = DurationDistribution::Exponential;
  c.model.categories = {a, b};
  c.recovery.name = "r";
  c.checkpoint_interval_s = 1800;
  c.checkpoint = {5, 60, 40};
  c.spec.duration_s = 7 * 86400.0;
  c.spec.iteration_time_s = 10;
  c.spec.seeds = 3;
  const auto s1 = run_campaign(c);
  const auto s2 = run_campaign(c);
  for (size_t k = 0; k < 3; ++k) {
    CHECK(s1.runs[k].time_by_state_s == s2.runs[k].time_by_state_s);
    CHECK(s1.runs[k].interruptions == s2.runs[k].interruptions);
    check_sums_to_wall(s1.runs[k], c.spec.duration_s);
  }
  CHECK(s1.runs[0].time_by_state_s != s1.runs[1].time_by_state_s);
  // ~7e-6 × 12,288 × 168 h ≈ 14.5 interruptions per week from category a.
  CHECK(s1.interruptions_by_category[0].mean > 7);
  CHECK(s1.interruptions_by_category[0].mean < 25);
  CHECK(s1.ettr.mean > 0.5);
  CHECK(s1.ettr.mean < 1.0);
  c.model.inter_arrival = InterArrival::Weibull;
  c.model.weibull_shape = 0.7;
  const auto w = run_campaign(c);
  CHECK(w.runs[0].time_by_state_s != s1.runs[0].time_by_state_s);
}

TEST_CASE("campaign: invalid inputs are errors", "[faults][campaign][errors]") {
  auto c = scripted({{260, 0}}, category(FaultEffect::Interrupt, DetectionSignal::ExplicitError, false, 0));
  c.checkpoint_interval_s = 5; // shorter than the 10 s checkpoint
  CHECK_THROWS_WITH(run_campaign(c), Catch::Contains("shorter than the checkpoint itself"));
  c.checkpoint_interval_s = 100;
  c.model.categories[0].rate_per_gpu_hour = 0;
  CHECK_THROWS_WITH(run_campaign(c), Catch::Contains("rate") && Catch::Contains("must be > 0"));
  c.model.categories[0].rate_per_gpu_hour = -1;
  CHECK_THROWS_AS(run_campaign(c), FaultError);
  c.model.categories[0].rate_per_gpu_hour = 1e-6;
  c.recovery.diagnostics.false_negative_rate = 1.5;
  CHECK_THROWS_WITH(run_campaign(c), Catch::Contains("false_negative_rate"));
  c.recovery.diagnostics.false_negative_rate = 0;
  c.spec.scripted_faults = {{10, 3}};
  CHECK_THROWS_WITH(run_campaign(c), Catch::Contains("scripted fault 0"));
}

TEST_CASE("campaign: an absurd fault rate is refused up front, naming the category", "[faults][campaign][hardening]") {
  FaultCategorySpec cat = category(FaultEffect::Interrupt, DetectionSignal::ExplicitError, true, 1);
  cat.name = "cosmic rays";
  Campaign c = scripted({}, cat);
  c.model.categories[0].rate_per_gpu_hour = 1e300;
  CHECK_THROWS_WITH(run_campaign(c), Catch::Contains("faults per seed") && Catch::Contains("cosmic rays"));
  c.model.categories[0].rate_per_gpu_hour = std::nan(""); // the model's own check names it
  CHECK_THROWS_WITH(run_campaign(c), Catch::Contains("cosmic rays"));
  c.model.categories[0].rate_per_gpu_hour = 1e-3; // 2000 s on 1 GPU: ~0.0006 faults
  CHECK_NOTHROW(run_campaign(c));
  c.spec.duration_s = 1e15; // 10^13 checkpoints of 100 s: refused, not simulated for hours
  CHECK_THROWS_WITH(run_campaign(c), Catch::Contains("checkpoints per seed"));
}
