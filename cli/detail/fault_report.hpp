// Output of `campaign` and `tune-checkpoint`: human tables, JSON and CSV, all with fixed
// float formatting so that the same inputs and seeds give byte-identical output.
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "faults/campaign.hpp"
#include "faults/checkpoint_tuner.hpp"

namespace twinscale::cli::detail {

inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

inline nlohmann::json ci_json(const faults::MeanCi& m) { return {{"mean", m.mean}, {"ci95", m.half_width}}; }

/// The effective fault model, as the campaign used it (rates per GPU-hour).
inline nlohmann::json model_json(const faults::FaultModel& m) {
  nlohmann::json j = {{"name", m.name},
                      {"source", m.source},
                      {"inter_arrival", faults::to_string(m.inter_arrival)},
                      {"weibull_shape", m.weibull_shape},
                      {"gpus_per_node", m.gpus_per_node}};
  nlohmann::json cats = nlohmann::json::array();
  for (const auto& c : m.categories)
    cats.push_back({{"kind", faults::to_string(c.category)},
                    {"name", c.name},
                    {"rate_per_gpu_hour", c.rate_per_gpu_hour},
                    {"scope", faults::to_string(c.scope)},
                    {"effect", faults::to_string(c.effect)},
                    {"detection", faults::to_string(c.detection)},
                    {"needs_eviction", c.needs_eviction},
                    {"diagnosable", c.diagnosable},
                    {"duration_s", c.duration_s},
                    {"duration_distribution",
                     c.duration_distribution == faults::DurationDistribution::Fixed ? "fixed" : "exponential"},
                    {"slowdown", c.slowdown}});
  j["categories"] = cats;
  return j;
}

/// The effective recovery and checkpoint policy.
inline nlohmann::json policy_json(const faults::RecoveryPolicy& p, const faults::CheckpointPolicy& ck) {
  return {
      {"name", p.name},
      {"restart_s", p.restart_s},
      {"load_method", faults::to_string(p.load_method)},
      {"retransmit", {{"timeout_per_retry_s", p.retransmit.timeout_per_retry_s}, {"retries", p.retransmit.retries}}},
      {"detection",
       {{"explicit_error_s", p.detection.explicit_error_s},
        {"heartbeat_period_s", p.detection.heartbeat_period_s},
        {"heartbeat_misses", p.detection.heartbeat_misses},
        {"traffic_window_s", p.detection.traffic_window_s},
        {"silent_s", p.detection.silent_s}}},
      {"diagnostics",
       {{"duration_s", p.diagnostics.duration_s},
        {"false_negative_rate", p.diagnostics.false_negative_rate},
        {"false_positive_rate", p.diagnostics.false_positive_rate},
        {"escalate_after", p.diagnostics.escalate_after},
        {"escalation_s", p.diagnostics.escalation_s},
        {"missed_fault_recurrence_s", p.diagnostics.missed_fault_recurrence_s}}},
      {"replacement",
       {{"warm_spares", p.replacement.warm_spares},
        {"spare_swap_s", p.replacement.spare_swap_s},
        {"cold_replacement_s", p.replacement.cold_replacement_s},
        {"repair_s", p.replacement.repair_s}}},
      {"comm_init", {{"method", faults::to_string(p.comm_init.method)}, {"store_op_s", p.comm_init.store_op_s}}},
      {"checkpoint", {{"interval_s", ck.interval_s}, {"async_persist", ck.async_persist}}},
      {"storage",
       {{"pcie_bw_bytes_per_s", ck.storage.pcie_bw_bytes_per_s},
        {"write_bw_bytes_per_s", ck.storage.write_bw_bytes_per_s},
        {"read_bw_bytes_per_s", ck.storage.read_bw_bytes_per_s},
        {"client_bw_bytes_per_s", ck.storage.client_bw_bytes_per_s},
        {"broadcast_bw_bytes_per_s", ck.storage.broadcast_bw_bytes_per_s}}}};
}

inline nlohmann::json summary_json(const faults::CampaignSummary& s, const faults::Campaign& c) {
  nlohmann::json j;
  j["ettr"] = ci_json(s.ettr);
  j["interruptions"] = ci_json(s.interruptions);
  j["lost_work_s"] = ci_json(s.lost_work_s);
  j["checkpoints_lost"] = ci_json(s.checkpoints_lost);
  j["recovery_median_s"] = s.recovery_median_s;
  j["recovery_p99_s"] = s.recovery_p99_s;
  j["interrupt_mtbf_s"] = s.interrupt_mtbf_s;
  j["comm_init_s"] = s.comm_init_s;
  j["restart_total_s"] = s.restart_total_s;
  j["checkpoint_interval_s"] = s.checkpoint_interval_s;
  nlohmann::json states = nlohmann::json::object();
  for (size_t i = 0; i < faults::kRunStates; ++i)
    states[faults::to_string(static_cast<faults::RunState>(i))] = ci_json(s.time_by_state_s[i]);
  j["time_by_state_s"] = states;
  nlohmann::json causes = nlohmann::json::array();
  for (size_t i = 0; i < c.model.categories.size(); ++i)
    causes.push_back({{"category", c.model.categories[i].name},
                      {"kind", faults::to_string(c.model.categories[i].category)},
                      {"interruptions", ci_json(s.interruptions_by_category[i])}});
  j["interruptions_by_cause"] = causes;
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : s.runs)
    runs.push_back({{"seed", r.seed},
                    {"ettr", r.ettr()},
                    {"interruptions", r.interruptions},
                    {"repeat_interruptions", r.repeat_interruptions},
                    {"failed_recoveries", r.failed_recoveries},
                    {"stalls_survived", r.stalls},
                    {"lost_work_s", r.lost_work_s},
                    {"checkpoints_durable", r.checkpoints_durable},
                    {"checkpoints_lost", r.checkpoints_lost},
                    {"evictions", r.evictions},
                    {"false_evictions", r.false_evictions},
                    {"missed_diagnoses", r.missed_diagnoses},
                    {"cold_replacements", r.cold_replacements}});
  j["runs"] = runs;
  return j;
}

inline std::string states_csv(const faults::CampaignSummary& s) {
  std::string out = "state,hours_mean,hours_ci95,share\n";
  double wall = 0;
  for (auto& m : s.time_by_state_s) wall += m.mean;
  for (size_t i = 0; i < faults::kRunStates; ++i) {
    const auto& m = s.time_by_state_s[i];
    out += std::string(faults::to_string(static_cast<faults::RunState>(i))) + "," + fmt("%.6f", m.mean / 3600) + "," +
           fmt("%.6f", m.half_width / 3600) + "," + fmt("%.6f", wall > 0 ? m.mean / wall : 0) + "\n";
  }
  return out;
}

inline std::string csv_field(const std::string& s) {
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

inline std::string causes_csv(const faults::CampaignSummary& s, const faults::Campaign& c) {
  std::string out = "category,kind,interruptions_mean,interruptions_ci95\n";
  for (size_t i = 0; i < c.model.categories.size(); ++i)
    out += csv_field(c.model.categories[i].name) + "," + faults::to_string(c.model.categories[i].category) + "," +
           fmt("%.4f", s.interruptions_by_category[i].mean) + "," +
           fmt("%.4f", s.interruptions_by_category[i].half_width) + "\n";
  return out;
}

/// Below this ETTR the job spends almost all its time recovering: a degenerate regime.
inline constexpr double kDegenerateEttr = 0.05;

/// Warnings, one a line, for a regime where the figures mean little: ETTR near 0, or a
/// restart (process restart and communicator init) longer than the interruption MTBF.
inline std::string degenerate_regime_warnings(double ettr, double restart_s, double mtbf_s) {
  std::string o;
  if (restart_s >= mtbf_s)
    o += "twinscale: warning: a restart takes " + fmt("%.0f", restart_s) +
         " s (restart + communicator init), longer "
         "than the interruption MTBF of " +
         fmt("%.0f", mtbf_s) +
         " s at this size: most restarts are interrupted "
         "before training resumes; try a faster recovery policy (e.g. --recovery megascale) or fewer GPUs\n";
  if (ettr < kDegenerateEttr)
    o += "twinscale: warning: ETTR " + fmt("%.4f", ettr) +
         " is near 0: the job spends almost all its time "
         "recovering, so the checkpoint interval hardly matters and the Young/Daly formulas do not apply\n";
  return o;
}

inline std::string campaign_table(const std::string& job, const faults::CampaignSummary& s, const faults::Campaign& c) {
  const int64_t gpus = c.shape.tp * c.shape.dp * c.shape.pp;
  std::string o;
  o += "campaign: " + job + " on " + std::to_string(gpus) + " GPUs, " + fmt("%.1f", c.spec.duration_s / 86400) +
       " days x " + std::to_string(c.spec.seeds) + " seeds; faults " + c.model.name + ", recovery " + c.recovery.name +
       "\n";
  o += "  iteration " + fmt("%.3f", c.spec.iteration_time_s) + " s; checkpoint every " +
       fmt("%.0f", s.checkpoint_interval_s) + " s (blocking " + fmt("%.2f", c.checkpoint.blocking_s) + " s, persist " +
       fmt("%.1f", c.checkpoint.persist_s) + " s, load " + fmt("%.1f", c.checkpoint.load_s) + " s)\n";
  o += "  restart " + fmt("%.1f", c.recovery.restart_s) + " s + communicator init " + fmt("%.1f", s.comm_init_s) +
       " s; interruption MTBF " + fmt("%.2f", s.interrupt_mtbf_s / 3600) + " h\n\n";
  o += "  ETTR            " + fmt("%.4f", s.ettr.mean) + " ± " + fmt("%.4f", s.ettr.half_width) +
       "  (95% CI over seeds)\n";
  o += "  interruptions   " + fmt("%.1f", s.interruptions.mean) + " ± " + fmt("%.1f", s.interruptions.half_width) +
       " per run\n";
  o += "  lost work       " + fmt("%.2f", s.lost_work_s.mean / 3600) + " h per run; checkpoints lost " +
       fmt("%.1f", s.checkpoints_lost.mean) + "\n";
  o += "  recovery time   median " + fmt("%.0f", s.recovery_median_s) + " s, p99 " + fmt("%.0f", s.recovery_p99_s) +
       " s (fault → training resumes)\n\n";
  o += "  state                hours     ±95%   share\n";
  double wall = 0;
  for (auto& m : s.time_by_state_s) wall += m.mean;
  for (size_t i = 0; i < faults::kRunStates; ++i) {
    const auto& m = s.time_by_state_s[i];
    char line[160];
    std::snprintf(line, sizeof line, "  %-17s %9.2f %8.2f %6.2f%%\n",
                  faults::to_string(static_cast<faults::RunState>(i)), m.mean / 3600, m.half_width / 3600,
                  100 * m.mean / wall);
    o += line;
  }
  o += "\n  interruptions by cause (per run)\n";
  for (size_t i = 0; i < c.model.categories.size(); ++i) {
    const auto& m = s.interruptions_by_category[i];
    char line[256];
    std::snprintf(line, sizeof line, "  %8.2f ± %-6.2f %s\n", m.mean, m.half_width, c.model.categories[i].name.c_str());
    o += line;
  }
  return o;
}

inline nlohmann::json tuner_json(const faults::TunerResult& r) {
  nlohmann::json j;
  j["checkpoint_s"] = r.checkpoint_s;
  j["mtbf_s"] = r.mtbf_s;
  j["young_s"] = r.young_s;
  j["daly_s"] = r.daly_s;
  j["best_s"] = r.points[r.best].interval_s;
  j["band_s"] = {r.band_lo_s, r.band_hi_s};
  j["bracket_s"] = {r.bracket_lo_s, r.bracket_hi_s};
  j["young_consistent"] = r.consistent(r.young_s);
  j["daly_consistent"] = r.consistent(r.daly_s);
  nlohmann::json pts = nlohmann::json::array();
  for (auto& p : r.points)
    pts.push_back({{"interval_s", p.interval_s},
                   {"ettr", ci_json(p.ettr)},
                   {"daly_model_ettr", p.daly_ettr},
                   {"in_band", p.in_band}});
  j["points"] = pts;
  return j;
}

inline std::string sweep_csv(const faults::TunerResult& r) {
  std::string out = "interval_s,ettr_mean,ettr_ci95,daly_model_ettr,in_band,young_s,daly_s\n";
  for (auto& p : r.points)
    out += fmt("%.3f", p.interval_s) + "," + fmt("%.6f", p.ettr.mean) + "," + fmt("%.6f", p.ettr.half_width) + "," +
           fmt("%.6f", p.daly_ettr) + "," + (p.in_band ? "1" : "0") + "," + fmt("%.3f", r.young_s) + "," +
           fmt("%.3f", r.daly_s) + "\n";
  return out;
}

inline std::string tuner_table(const std::string& job, const faults::TunerResult& r, const faults::Campaign& c) {
  std::string o = "tune-checkpoint: " + job + ", faults " + c.model.name + ", recovery " + c.recovery.name + ", " +
                  std::to_string(c.spec.seeds) + " seeds x " + fmt("%.1f", c.spec.duration_s / 86400) + " days\n";
  o += "  checkpoint (blocking) δ = " + fmt("%.2f", r.checkpoint_s) +
       " s, interruption MTBF M = " + fmt("%.0f", r.mtbf_s) + " s\n\n";
  o += "  interval_s   ETTR     ±95%    Daly-model   optimum band\n";
  for (size_t i = 0; i < r.points.size(); ++i) {
    const auto& p = r.points[i];
    char line[160];
    std::snprintf(line, sizeof line, "  %10.1f  %.4f  %.4f   %.4f       %s%s\n", p.interval_s, p.ettr.mean,
                  p.ettr.half_width, p.daly_ettr, p.in_band ? "*" : " ", i == r.best ? " best" : "");
    o += line;
  }
  o += "\n  simulated optimum " + fmt("%.0f", r.points[r.best].interval_s) + " s; band [" + fmt("%.0f", r.band_lo_s) +
       ", " + fmt("%.0f", r.band_hi_s) + "] s (* = not significantly worse than the best, paired over seeds);\n" +
       "  at this grid's resolution the optimum lies in (" + fmt("%.0f", r.bracket_lo_s) + ", " +
       fmt("%.0f", r.bracket_hi_s) + ") s\n";
  // With ETTR near 0 at every interval the grid has no optimum to compare a formula with.
  const bool degenerate = r.points[r.best].ettr.mean < kDegenerateEttr;
  auto verdict = [&](double v) {
    return degenerate        ? " (not comparable: ETTR near 0 at every interval)"
           : r.consistent(v) ? " (consistent)"
                             : " (outside)";
  };
  o += "  Young √(2δM) = " + fmt("%.0f", r.young_s) + " s" + verdict(r.young_s) +
       "; Daly (higher order) = " + fmt("%.0f", r.daly_s) + " s" + verdict(r.daly_s) + "\n";
  return o;
}

} // namespace twinscale::cli::detail
