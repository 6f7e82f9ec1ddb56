#include "faults/campaign.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "faults/detail/random.hpp"
#include "faults/error.hpp"

namespace twinscale::faults {

const char* to_string(RunState s) {
  switch (s) {
  case RunState::Training: return "training";
  case RunState::CheckpointStall: return "checkpoint_stall";
  case RunState::NetworkStall: return "network_stall";
  case RunState::Slowdown: return "slowdown";
  case RunState::Detection: return "detection";
  case RunState::Diagnosis: return "diagnosis";
  case RunState::Replacement: return "replacement";
  case RunState::RestartInit: return "restart_init";
  case RunState::CheckpointLoad: return "checkpoint_load";
  case RunState::Replay: return "replay";
  }
  return "?";
}

double CampaignRun::wall_s() const {
  double s = 0;
  for (double v : time_by_state_s) s += v;
  return s;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum class CampaignPhase : uint8_t {
  Training,
  CheckpointStall,
  Detection,
  Diagnosis,
  Replacement,
  RestartInit,
  CheckpointLoad
};

/// What the campaign loop handles next (the earliest of the candidates it considers).
enum class NextEvent : uint8_t {
  End,             // the campaign's duration is reached
  FaultArrival,    // a fault of a category arrives (sampled)
  PhaseEnd,        // a recovery phase or checkpoint stall ends
  CheckpointDue,   // the work position reaches the next checkpoint
  PersistDone,     // an asynchronous checkpoint became durable
  StallEnd,        // a network stall ends
  SlowdownEnd,     // a straggler's slowdown ends
  Recurrence,      // a fault that was not fixed strikes again
  SilentDetection, // a silent fault is finally detected
  ScriptedFault,   // the next fault of a scripted campaign
};

struct Suspect {
  size_t category = 0;
  int64_t misses = 0; // diagnostics rounds that already missed this fault
};

int64_t gpus_of(const topology::JobShape& s) { return s.tp * s.dp * s.pp; }

// Bounded growth: every fault drawn is an event and may open an incident with its own
// records, so the expected number of faults bounds a campaign's time and memory. Llama 3's
// 54 days on 16k GPUs saw 466 interruptions; these limits are 2,000× that.
constexpr double kMaxFaultsPerSeed = 1e6;
constexpr double kMaxFaultsAllSeeds = 1e7;
// Checkpoints: 28 days at a 1-minute interval is 40,320; 10^7 is 250× that.
constexpr double kMaxCheckpointsPerSeed = 1e7;
constexpr double kMaxCheckpointsAllSeeds = 1e8;

void check_campaign_growth(const Campaign& c) {
  const double gpus =
      static_cast<double>(c.shape.tp) * static_cast<double>(c.shape.dp) * static_cast<double>(c.shape.pp);
  const double hours = c.spec.duration_s / 3600.0;
  double total = 0, worst = -1;
  size_t worst_i = 0;
  for (size_t i = 0; i < c.model.categories.size(); ++i) {
    const double rate = c.model.categories[i].rate_per_gpu_hour;
    if (!std::isfinite(rate) || rate < 0)
      throw FaultError("campaign: fault category '" + c.model.categories[i].name + "' has rate " +
                       std::to_string(rate) + " per GPU-hour; valid: a finite rate ≥ 0");
    const double n = rate * gpus * hours;
    total += n;
    if (n > worst) worst = n, worst_i = i;
  }
  const double seeds = static_cast<double>(c.spec.seeds);
  // every checkpoint is an event too: duration / interval of them per seed
  const double interval = std::max(c.checkpoint_interval_s, c.spec.iteration_time_s);
  const double checkpoints = interval > 0 ? c.spec.duration_s / interval : 0;
  if (!(checkpoints <= kMaxCheckpointsPerSeed) || !(checkpoints * seeds <= kMaxCheckpointsAllSeeds)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.3g checkpoints per seed (%.6g days, one every %.6g s of work)", checkpoints,
                  hours / 24.0, interval);
    throw FaultError(std::string("campaign: ") + buf + " × " + std::to_string(c.spec.seeds) +
                     " seeds; at most 10^7 per seed and 10^8 in all (every checkpoint is simulated): use fewer "
                     "days or seeds, or a longer checkpoint interval");
  }
  if (!(total <= kMaxFaultsPerSeed) || !(total * seeds <= kMaxFaultsAllSeeds)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", total);
    std::string msg = std::string("campaign: the fault model gives about ") + buf + " faults per seed over ";
    std::snprintf(buf, sizeof buf, "%.6g", hours / 24.0);
    msg += std::string(buf) + " days on " + std::to_string(static_cast<long long>(gpus)) + " GPUs";
    if (!c.model.categories.empty()) {
      std::snprintf(buf, sizeof buf, "%.3g", worst);
      msg += " ('" + c.model.categories[worst_i].name + "' alone " + buf + ")";
    }
    throw FaultError(msg + ", × " + std::to_string(c.spec.seeds) +
                     " seeds; at most 10^6 per seed and 10^7 in all (every fault is simulated): check the "
                     "rates (per GPU-hour), or use fewer days or seeds");
  }
}

/// Work between checkpoints, rounded up to whole iterations.
double rounded_interval(const Campaign& c) {
  const double it = c.spec.iteration_time_s;
  return std::max(1.0, std::ceil(c.checkpoint_interval_s / it - 1e-9)) * it;
}

class Engine {
public:
  Engine(const Campaign& c, uint64_t seed)
      : c_(c), decide_(seed, 0), interval_work_(rounded_interval(c)),
        restart_total_s_(c.recovery.restart_s + comm_init_s(c.recovery.comm_init, c.shape)),
        tolerated_s_(c.recovery.retransmit.tolerated_outage_s()) {
    run_.seed = seed;
    const size_t n = c.model.categories.size();
    run_.interruptions_by_category.assign(n, 0);
    run_.faults_by_category.assign(n, 0);
    const int64_t gpus = gpus_of(c.shape);
    for (size_t i = 0; i < n; ++i) {
      rngs_.emplace_back(seed, i + 1);
      const double mean_s = 3600.0 / c.model.cluster_rate_per_hour(i, gpus);
      mean_gap_s_.push_back(mean_s);
      next_arrival_.push_back(draw_gap(i));
    }
    spares_ = c.recovery.replacement.warm_spares;
    scripted_ = !c.spec.scripted_faults.empty();
  }

  CampaignRun run() {
    // The job starts like a restart without a checkpoint to load.
    enter(CampaignPhase::RestartInit, restart_total_s_);
    incident_open_ = false;
    const double end = c_.spec.duration_s;
    while (t_ < end) {
      // Next event.
      double te = end;
      NextEvent kind = NextEvent::End;
      size_t which = 0;
      auto consider = [&](double when, NextEvent k, size_t w = 0) {
        when = std::max(when, t_); // overdue (e.g. a detection while recovering): now
        if (when < te) {
          te = when;
          kind = k;
          which = w;
        }
      };
      if (scripted_) {
        if (script_pos_ < c_.spec.scripted_faults.size())
          consider(c_.spec.scripted_faults[script_pos_].at_s, NextEvent::ScriptedFault);
      } else {
        for (size_t i = 0; i < next_arrival_.size(); ++i) consider(next_arrival_[i], NextEvent::FaultArrival, i);
      }
      if (phase_ != CampaignPhase::Training) consider(phase_end_, NextEvent::PhaseEnd);
      if (pending_) consider(pending_done_t_, NextEvent::PersistDone);
      if (computing()) {
        consider(recurrence_at_, NextEvent::Recurrence);
        consider(silent_detect_at_, NextEvent::SilentDetection);
      }
      if (phase_ == CampaignPhase::Training) {
        if (t_ < stall_until_) {
          consider(stall_until_, NextEvent::StallEnd);
        } else {
          const double speed = current_speed();
          consider(t_ + (next_ckpt_work_ - work_) / speed, NextEvent::CheckpointDue);
        }
      }
      for (size_t i = 0; i < slow_.size(); ++i) consider(slow_[i].first, NextEvent::SlowdownEnd, i);
      advance(te);
      switch (kind) {
      case NextEvent::End: break;
      case NextEvent::FaultArrival: on_arrival(which); break;
      case NextEvent::PhaseEnd: on_phase_end(); break;
      case NextEvent::CheckpointDue:
        work_ = next_ckpt_work_;
        enter(CampaignPhase::CheckpointStall, c_.checkpoint.blocking_s);
        break;
      case NextEvent::PersistDone:
        ckpt_durable_ = pending_work_;
        pending_ = false;
        ++run_.checkpoints_durable;
        break;
      case NextEvent::StallEnd: stall_until_ = -kInf; break;
      case NextEvent::SlowdownEnd: slow_.erase(slow_.begin() + static_cast<std::ptrdiff_t>(which)); break;
      case NextEvent::Recurrence: on_recurrence(); break;
      case NextEvent::SilentDetection: on_silent_detection(); break;
      case NextEvent::ScriptedFault: on_fault(c_.spec.scripted_faults[script_pos_++].category); break;
      }
    }
    return std::move(run_);
  }

private:
  bool computing() const { return phase_ == CampaignPhase::Training || phase_ == CampaignPhase::CheckpointStall; }
  bool recovering_early() const { return phase_ == CampaignPhase::Detection || phase_ == CampaignPhase::Diagnosis; }

  double current_speed() const {
    double worst = 0;
    for (auto& s : slow_) worst = std::max(worst, s.second);
    return 1.0 - worst;
  }

  double& state(RunState s) { return run_.time_by_state_s[static_cast<size_t>(s)]; }

  void advance(double te) {
    const double dt = te - t_;
    if (dt > 0) {
      switch (phase_) {
      case CampaignPhase::Training:
        if (t_ < stall_until_) {
          state(RunState::NetworkStall) += dt;
        } else {
          const double speed = current_speed();
          state(RunState::Training) += speed * dt;
          state(RunState::Slowdown) += (1.0 - speed) * dt;
          work_ += speed * dt;
        }
        break;
      case CampaignPhase::CheckpointStall: state(RunState::CheckpointStall) += dt; break;
      case CampaignPhase::Detection: state(RunState::Detection) += dt; break;
      case CampaignPhase::Diagnosis: state(RunState::Diagnosis) += dt; break;
      case CampaignPhase::Replacement: state(RunState::Replacement) += dt; break;
      case CampaignPhase::RestartInit: state(RunState::RestartInit) += dt; break;
      case CampaignPhase::CheckpointLoad: state(RunState::CheckpointLoad) += dt; break;
      }
    }
    t_ = te;
  }

  void enter(CampaignPhase p, double duration_s) {
    phase_ = p;
    phase_end_ = t_ + duration_s;
  }

  double draw_gap(size_t i) {
    auto& rng = rngs_[i];
    if (c_.model.inter_arrival == InterArrival::Weibull) {
      const double k = c_.model.weibull_shape;
      return t_ + rng.weibull(k, detail::weibull_scale_for_mean(mean_gap_s_[i], k));
    }
    return t_ + rng.exponential(mean_gap_s_[i]);
  }

  double draw_duration(size_t i) {
    const auto& cat = c_.model.categories[i];
    if (cat.duration_distribution == DurationDistribution::Exponential) return rngs_[i].exponential(cat.duration_s);
    return cat.duration_s;
  }

  void rollback_to(double position) {
    if (work_ > position) {
      const double lost = work_ - position;
      run_.lost_work_s += lost;
      state(RunState::Training) -= lost;
      state(RunState::Replay) += lost;
      work_ = position;
    }
    ckpt_durable_ = std::min(ckpt_durable_, position);
    if (pending_) {
      ++run_.checkpoints_lost;
      pending_ = false;
    }
  }

  void on_arrival(size_t i) {
    next_arrival_[i] = draw_gap(i);
    on_fault(i);
  }

  void on_fault(size_t i) {
    ++run_.faults_by_category[i];
    const auto& cat = c_.model.categories[i];
    switch (cat.effect) {
    case FaultEffect::Slowdown: slow_.emplace_back(t_ + draw_duration(i), cat.slowdown); return;
    case FaultEffect::Outage: {
      const double d = draw_duration(i);
      if (!computing()) return; // no traffic to disturb
      if (d <= tolerated_s_) {
        ++run_.stalls;
        if (phase_ == CampaignPhase::Training) stall_until_ = std::max(stall_until_, t_ + d);
        return;
      }
      strike(i, 0, tolerated_s_); // flows stall, then fail after the retransmit limit
      return;
    }
    case FaultEffect::Interrupt: strike(i, 0, 0); return;
    }
  }

  /// A fault of category i that stops the job (misses: earlier diagnostics missed it).
  void strike(size_t i, int64_t misses, double extra_detection_s) {
    const auto& cat = c_.model.categories[i];
    if (cat.detection == DetectionSignal::None) {
      if (computing() && silent_detect_at_ == kInf) {
        // Corrupts silently from now on; found silent_s later.
        silent_restore_ = ckpt_durable_;
        silent_detect_at_ = t_ + c_.recovery.detection.silent_s;
        silent_ = Suspect{i, misses};
      } else if (cat.needs_eviction) {
        latent_.push_back(Suspect{i, misses});
      }
      return;
    }
    const double detect_s = c_.recovery.detection.latency_s(cat.detection) + extra_detection_s;
    if (computing()) {
      open_incident(i, misses > 0);
      rollback_to(ckpt_durable_);
      if (cat.needs_eviction) suspects_.push_back(Suspect{i, misses});
      enter(CampaignPhase::Detection, detect_s);
    } else if (recovering_early()) {
      if (cat.needs_eviction) suspects_.push_back(Suspect{i, misses});
    } else { // replacement, restart or load fails: recovery starts over
      ++run_.failed_recoveries;
      if (cat.needs_eviction) suspects_.push_back(Suspect{i, misses});
      enter(CampaignPhase::Detection, detect_s);
    }
  }

  void open_incident(size_t i, bool repeat) {
    incident_open_ = true;
    incident_start_ = t_;
    ++run_.interruptions;
    ++run_.interruptions_by_category[i];
    if (repeat) ++run_.repeat_interruptions;
    recurrence_at_ = kInf;
  }

  void on_recurrence() {
    recurrence_at_ = kInf;
    if (latent_.empty()) return;
    const Suspect s = latent_.front();
    latent_.erase(latent_.begin());
    strike(s.category, s.misses, 0);
  }

  void on_silent_detection() {
    silent_detect_at_ = kInf;
    open_incident(silent_.category, silent_.misses > 0);
    rollback_to(silent_restore_);
    if (c_.model.categories[silent_.category].needs_eviction) suspects_.push_back(silent_);
    enter(CampaignPhase::Detection, 0);
  }

  void on_phase_end() {
    switch (phase_) {
    case CampaignPhase::Training: break;
    case CampaignPhase::CheckpointStall:
      if (c_.checkpoint.persist_s > 0) {
        pending_ = true;
        pending_work_ = work_;
        pending_done_t_ = t_ + c_.checkpoint.persist_s;
      } else {
        ckpt_durable_ = work_;
        ++run_.checkpoints_durable;
      }
      next_ckpt_work_ = work_ + interval_work_;
      enter(CampaignPhase::Training, 0);
      break;
    case CampaignPhase::Detection: start_diagnosis(); break;
    case CampaignPhase::Diagnosis: finish_diagnosis(); break;
    case CampaignPhase::Replacement: enter(CampaignPhase::RestartInit, restart_total_s_); break;
    case CampaignPhase::RestartInit:
      enter(CampaignPhase::CheckpointLoad, ckpt_durable_ > 0 ? c_.checkpoint.load_s : 0.0);
      break;
    case CampaignPhase::CheckpointLoad:
      if (incident_open_) run_.recovery_s.push_back(t_ - incident_start_);
      incident_open_ = false;
      next_ckpt_work_ = work_ + interval_work_;
      if (!latent_.empty()) recurrence_at_ = t_ + c_.recovery.diagnostics.missed_fault_recurrence_s;
      enter(CampaignPhase::Training, 0);
      break;
    }
  }

  void start_diagnosis() {
    const auto& d = c_.recovery.diagnostics;
    // Every fault still in the cluster is a suspect of this round.
    for (auto& s : latent_) suspects_.push_back(s);
    latent_.clear();
    double duration = d.duration_s;
    for (auto& s : suspects_)
      if (s.misses >= d.escalate_after) duration = std::max(duration, d.escalation_s);
    enter(CampaignPhase::Diagnosis, duration);
  }

  void finish_diagnosis() {
    const auto& d = c_.recovery.diagnostics;
    int64_t evict = 0;
    for (auto& s : suspects_) {
      const auto& cat = c_.model.categories[s.category];
      const bool escalated = s.misses >= d.escalate_after;
      if (escalated || decide_.bernoulli(cat.diagnosable * (1.0 - d.false_negative_rate))) {
        ++evict;
      } else {
        ++run_.missed_diagnoses;
        latent_.push_back(Suspect{s.category, s.misses + 1});
      }
    }
    suspects_.clear();
    if (decide_.bernoulli(d.false_positive_rate)) {
      ++evict;
      ++run_.false_evictions;
    }
    enter(CampaignPhase::Replacement, replacement_wait(evict));
  }

  /// Takes `nodes` replacements in parallel; returns the wait for the slowest one.
  double replacement_wait(int64_t nodes) {
    const auto& r = c_.recovery.replacement;
    // Repaired nodes return to the warm pool.
    std::sort(returns_.begin(), returns_.end());
    while (!returns_.empty() && returns_.front() <= t_) {
      returns_.erase(returns_.begin());
      ++spares_;
    }
    double wait = 0;
    for (int64_t k = 0; k < nodes; ++k) {
      ++run_.evictions;
      if (spares_ > 0) {
        --spares_;
        wait = std::max(wait, r.spare_swap_s);
      } else {
        ++run_.cold_replacements;
        wait = std::max(wait, r.cold_replacement_s);
      }
      if (r.warm_spares > 0) returns_.push_back(t_ + r.repair_s);
    }
    return wait;
  }

  const Campaign& c_;
  CampaignRun run_;
  std::vector<detail::Rng> rngs_; // per category: arrivals and durations
  detail::Rng decide_;            // diagnosis outcomes (kept apart so arrivals stay
                                  // identical across policies: common random numbers)
  std::vector<double> mean_gap_s_;
  std::vector<double> next_arrival_;
  const double interval_work_;
  const double restart_total_s_;
  const double tolerated_s_;

  bool scripted_ = false;
  size_t script_pos_ = 0;

  double t_ = 0;
  CampaignPhase phase_ = CampaignPhase::RestartInit;
  double phase_end_ = 0;

  double work_ = 0;
  double ckpt_durable_ = 0;
  double next_ckpt_work_ = 0;
  bool pending_ = false;
  double pending_work_ = 0;
  double pending_done_t_ = kInf;

  double stall_until_ = -kInf;
  std::vector<std::pair<double, double>> slow_; // (end time, slowdown)

  bool incident_open_ = false;
  double incident_start_ = 0;
  std::vector<Suspect> suspects_;
  std::vector<Suspect> latent_;
  double recurrence_at_ = kInf;

  double silent_detect_at_ = kInf;
  double silent_restore_ = 0;
  Suspect silent_;

  int64_t spares_ = 0;
  std::vector<double> returns_;
};

} // namespace

CampaignRun run_campaign_seed(const Campaign& campaign, uint64_t seed) {
  Engine e(campaign, seed);
  return e.run();
}

CampaignSummary run_campaign(const Campaign& c) {
  validate_model(c.model);
  validate_policy(c.recovery);
  if (c.shape.tp < 1 || c.shape.dp < 1 || c.shape.pp < 1)
    throw FaultError("campaign: the job shape needs TP, DP and PP ≥ 1");
  if (!(c.spec.duration_s > 0) || !std::isfinite(c.spec.duration_s))
    throw FaultError("campaign: duration must be > 0 seconds");
  if (!(c.spec.iteration_time_s > 0) || !std::isfinite(c.spec.iteration_time_s))
    throw FaultError("campaign: iteration time must be > 0 seconds");
  if (c.spec.seeds < 1) throw FaultError("campaign: seeds must be ≥ 1");
  check_campaign_growth(c);
  for (size_t k = 0; k < c.spec.scripted_faults.size(); ++k) {
    const auto& f = c.spec.scripted_faults[k];
    if (f.category >= c.model.categories.size() || !(f.at_s >= 0) ||
        (k > 0 && f.at_s < c.spec.scripted_faults[k - 1].at_s))
      throw FaultError("campaign: scripted fault " + std::to_string(k) +
                       " needs a known category index and a time ≥ 0, in time order");
  }
  if (!(c.checkpoint.blocking_s >= 0) || !(c.checkpoint.persist_s >= 0) || !(c.checkpoint.load_s >= 0))
    throw FaultError("campaign: checkpoint times must be ≥ 0 seconds");
  CheckpointPolicy interval_only;
  interval_only.interval_s = c.checkpoint_interval_s;
  validate_checkpoint(interval_only, c.checkpoint);

  CampaignSummary s;
  s.comm_init_s = comm_init_s(c.recovery.comm_init, c.shape);
  s.restart_total_s = c.recovery.restart_s + s.comm_init_s;
  s.interrupt_mtbf_s =
      c.model.interrupt_rate_per_hour(gpus_of(c.shape)) > 0 ? c.model.interrupt_mtbf_s(gpus_of(c.shape)) : kInf;
  s.checkpoint_interval_s = rounded_interval(c);
  for (int64_t k = 0; k < c.spec.seeds; ++k) {
    s.runs.push_back(run_campaign_seed(c, c.spec.seed + static_cast<uint64_t>(k)));
    if (c.on_seed_done) c.on_seed_done(k + 1, c.spec.seeds);
  }

  auto over_runs = [&](auto&& f) {
    std::vector<double> x;
    for (const auto& r : s.runs) x.push_back(f(r));
    return mean_ci(x);
  };
  s.ettr = over_runs([](const CampaignRun& r) { return r.ettr(); });
  for (size_t st = 0; st < kRunStates; ++st)
    s.time_by_state_s[st] = over_runs([st](const CampaignRun& r) { return r.time_by_state_s[st]; });
  for (size_t i = 0; i < c.model.categories.size(); ++i)
    s.interruptions_by_category.push_back(
        over_runs([i](const CampaignRun& r) { return static_cast<double>(r.interruptions_by_category[i]); }));
  s.interruptions = over_runs([](const CampaignRun& r) { return static_cast<double>(r.interruptions); });
  s.lost_work_s = over_runs([](const CampaignRun& r) { return r.lost_work_s; });
  s.checkpoints_lost = over_runs([](const CampaignRun& r) { return static_cast<double>(r.checkpoints_lost); });
  std::vector<double> rec;
  for (const auto& r : s.runs) rec.insert(rec.end(), r.recovery_s.begin(), r.recovery_s.end());
  s.recovery_median_s = quantile(rec, 0.5);
  s.recovery_p99_s = quantile(rec, 0.99);
  return s;
}

} // namespace twinscale::faults
