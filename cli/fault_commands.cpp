// `twinscale campaign` and `twinscale tune-checkpoint`: weeks of training under a fault
// model, a recovery policy and a checkpoint policy (faults/campaign.hpp), and the sweep of
// the checkpoint interval against Young's and Daly's formulas (faults/checkpoint_tuner.hpp).
//
//   twinscale campaign (JOB | --preset NAME) [--gpus N] [--faults PRESET|FILE]
//       [--recovery PRESET|FILE] [--days D] [--seeds K] [--seed S]
//       [--iteration-time S | [--cluster C] [--sim-mode analytic|flow]
//        [--placement linear|tor-aware|random] [--sim-seed S]]
//       [--checkpoint-interval S] [--json] [--out DIR]
//   twinscale tune-checkpoint (same job/fault/recovery options) [--min S] [--max S]
//       [--points N] [--json] [--out DIR]
//
// Without --iteration-time the iteration time comes from the simulator: the job is
// lowered, placed on the fabric of its cluster and run by sim::simulate (analytic mode by
// default), exactly as `twinscale simulate` would with the same options; the output says
// which mode gave which value (JSON: "iteration_time_source").
//
// With --out DIR: <cmd>.json (the full result and the effective configuration), CSVs
// (states, causes; sweep for tune-checkpoint) and PNG plots drawn by
// scripts/plot_campaign.py when python3 + matplotlib are available.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/checked_options.hpp"
#include "cli/commands.hpp"
#include "cli/detail/fault_report.hpp"
#include "cli/detail/plot_helper.hpp"
#include "cli/detail/simulated_iteration.hpp"
#include "cli/job_args.hpp"
#include "common/progress.hpp"
#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "config/fault_file.hpp"
#include "config/recovery_file.hpp"
#include "config/scenario.hpp"
#include "faults/checkpoint_tuner.hpp"
#include "schedules/output_file.hpp"

namespace twinscale::cli {

namespace {

struct FaultOptions {
  JobArgs job;
  std::string faults = "llama3-405b";
  std::string recovery = "megascale";
  double days = 28;
  int64_t seeds = 5;
  uint64_t seed = 1;
  std::optional<double> iteration_time_s; // given: overrides the simulator
  std::string cluster;                    // simulator: default the job's cluster
  std::string sim_mode = "analytic";
  std::string placement = "linear";
  uint64_t sim_seed = 1;
  std::optional<double> interval_s;
  bool json = false;
  std::string out;
  // tune-checkpoint
  std::optional<double> min_s, max_s;
  int points = 15;
};

void add_common(CLI::App* cmd, FaultOptions& o) {
  o.job.add_to(*cmd);
  cmd->add_option("--faults", o.faults, "fault model: preset name or TOML file")->capture_default_str();
  cmd->add_option("--recovery", o.recovery, "recovery + checkpoint policy: preset name or TOML file")
      ->capture_default_str();
  cmd->add_option("--days", o.days, "wall time simulated per seed, days")->capture_default_str();
  add_integer_option(*cmd, "--seeds", o.seeds, 1, 100000, "at most 10^5 independent runs",
                     "independent runs (confidence intervals over seeds)");
  add_seed_option(*cmd, "--seed", o.seed, "first seed");
  cmd->add_option("--iteration-time", o.iteration_time_s,
                  "seconds per training iteration (default: simulated with --sim-mode on --cluster)");
  cmd->add_option("--cluster", o.cluster, "cluster preset or file for the simulator (default: the job's)");
  cmd->add_option("--sim-mode", o.sim_mode, "simulator mode giving the iteration time")
      ->check(CLI::IsMember(config::sim_mode_names()))
      ->capture_default_str();
  cmd->add_option("--placement", o.placement, "rank placement for the simulator")
      ->check(CLI::IsMember(config::placement_names()))
      ->capture_default_str();
  add_seed_option(*cmd, "--sim-seed", o.sim_seed, "simulator seed (ECMP hashing, random placement)");
  cmd->add_flag("--json", o.json, "print JSON instead of a table");
  cmd->add_option("--out", o.out, "directory for JSON, CSVs and plots");
}

/// Everything a campaign needs, resolved from the options.
struct Setup {
  schedules::JobSpec job;
  faults::FaultModel model;
  config::RecoveryFile recovery;
  faults::CheckpointState state;
  faults::Campaign campaign;
  std::optional<detail::SimulatedIteration> simulated; // when the simulator gave the iteration time
};

Setup resolve(const FaultOptions& o) {
  Setup s;
  s.job = o.job.load();
  int64_t gpus_per_node = 8;
  if (!s.job.cluster.empty()) gpus_per_node = config::load_cluster(s.job.cluster, o.job.cluster_edits()).server.gpus;
  s.model = config::resolve_fault_model(o.faults);
  s.recovery = config::resolve_recovery(o.recovery);
  if (o.interval_s) s.recovery.checkpoint.interval_s = *o.interval_s;
  if (!(o.days > 0)) throw config::ConfigError("--days must be > 0");
  if (o.iteration_time_s && !(*o.iteration_time_s > 0))
    throw config::ConfigError("--iteration-time must be > 0 seconds");
  if (o.iteration_time_s && o.job.gpu_memory_override())
    throw config::ConfigError("--gpu-memory-gb: has no effect with --iteration-time (the memory check is the "
                              "simulated iteration's); give one of them");
  if (o.seeds < 1) throw config::ConfigError("--seeds must be ≥ 1");
  double iteration_time_s = 0;
  if (o.iteration_time_s) {
    iteration_time_s = *o.iteration_time_s;
  } else {
    s.simulated = detail::simulate_iteration(s.job, o.cluster, o.sim_mode, o.placement, o.sim_seed,
                                             o.job.cluster_edits(), o.job.gpu_memory_override());
    iteration_time_s = s.simulated->iteration_time_s;
    std::cerr << "twinscale: iteration time " << s.simulated->iteration_time_s << " s simulated (" << s.simulated->mode
              << " mode, " << s.simulated->cluster << ", " << s.simulated->placement << " placement, wall "
              << s.simulated->wall_s << " s)\n";
  }
  s.state = faults::checkpoint_state(s.job, gpus_per_node);
  faults::Campaign& c = s.campaign;
  c.model = s.model;
  c.recovery = s.recovery.policy;
  c.checkpoint_interval_s = s.recovery.checkpoint.interval_s;
  c.checkpoint = faults::checkpoint_times(s.recovery.checkpoint, s.state, s.recovery.policy.load_method);
  c.shape = s.state.shape;
  c.spec.duration_s = o.days * 86400.0;
  c.spec.iteration_time_s = iteration_time_s;
  c.spec.seeds = o.seeds;
  c.spec.seed = o.seed;
  return s;
}

void plot(const std::filesystem::path& dir, std::vector<std::string> args) {
  const auto script = detail::find_script("plot_campaign.py");
  if (script.empty()) {
    std::cerr << "twinscale: scripts/plot_campaign.py not found; CSVs are in " << dir << "\n";
    return;
  }
  args.insert(args.end(), {"--out", dir.string()});
  const int rc = detail::run_python(script, args);
  if (rc == detail::kPlotWriteFailed)
    throw schedules::OutputFileError(dir.string() +
                                     ": cannot write the plots (the cause is above); the CSVs are there");
  if (rc != 0)
    std::cerr << "twinscale: plotting failed (python3 with matplotlib needed); the CSVs are in " << dir << "\n";
}

nlohmann::json setup_json(const Setup& s, const FaultOptions& o) {
  nlohmann::json j;
  j["job"] = s.job.name;
  j["gpus"] = s.state.gpus();
  j["shape"] = {{"tp", s.state.shape.tp}, {"dp", s.state.shape.dp}, {"pp", s.state.shape.pp}};
  j["parameters"] = s.state.parameters;
  j["checkpoint_bytes"] = s.state.unique_bytes;
  j["fault_model"] = detail::model_json(s.model);
  j["recovery"] = detail::policy_json(s.campaign.recovery, s.recovery.checkpoint);
  j["recovery"]["source"] = s.recovery.source;
  j["days"] = o.days;
  j["seeds"] = o.seeds;
  j["seed"] = o.seed;
  j["iteration_time_s"] = s.campaign.spec.iteration_time_s;
  if (s.simulated)
    j["iteration_time_source"] = {{"kind", "simulated"},
                                  {"mode", s.simulated->mode},
                                  {"cluster", s.simulated->cluster},
                                  {"placement", s.simulated->placement},
                                  {"seed", s.simulated->seed},
                                  {"mfu", s.simulated->mfu}};
  else
    j["iteration_time_source"] = {{"kind", "given"}};
  j["checkpoint"] = {{"interval_s", s.campaign.checkpoint_interval_s},
                     {"blocking_s", s.campaign.checkpoint.blocking_s},
                     {"persist_s", s.campaign.checkpoint.persist_s},
                     {"load_s", s.campaign.checkpoint.load_s},
                     {"async_persist", s.recovery.checkpoint.async_persist}};
  return j;
}

/// "iteration time 12.345678 s (simulated: analytic mode, …)" — the first line of a table.
std::string iteration_line(const Setup& s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", s.campaign.spec.iteration_time_s);
  std::string line = std::string("iteration time ") + buf + " s (";
  if (s.simulated)
    line += "simulated: " + s.simulated->mode + " mode on " + s.simulated->cluster + ", " + s.simulated->placement +
            " placement, seed " + std::to_string(s.simulated->seed) + ")\n";
  else
    line += "given by --iteration-time)\n";
  return line;
}

int run_campaign_command(const FaultOptions& o) {
  Setup s = resolve(o);
  Progress progress("campaign seeds", s.campaign.spec.seeds, "seeds"); // stderr unless --quiet
  if (progress.shown()) s.campaign.on_seed_done = [&progress](int64_t done, int64_t) { progress.update(done); };
  const faults::CampaignSummary sum = faults::run_campaign(s.campaign);
  nlohmann::json j = setup_json(s, o);
  j["result"] = detail::summary_json(sum, s.campaign);
  if (!o.out.empty()) {
    const std::filesystem::path dir(o.out);
    make_output_dir(o.out, "--out");
    write_file_atomically((dir / "campaign.json").string(), j.dump(2) + "\n");
    write_file_atomically((dir / "campaign_states.csv").string(), detail::states_csv(sum));
    write_file_atomically((dir / "campaign_causes.csv").string(), detail::causes_csv(sum, s.campaign));
    plot(dir, {"--states", (dir / "campaign_states.csv").string()});
  }
  std::cerr << detail::degenerate_regime_warnings(sum.ettr.mean, sum.restart_total_s, sum.interrupt_mtbf_s);
  if (o.json)
    std::cout << j.dump(2) << "\n";
  else
    std::cout << iteration_line(s) << detail::campaign_table(s.job.name, sum, s.campaign);
  return 0;
}

int run_tune_command(const FaultOptions& o) {
  Setup s = resolve(o);
  const double delta = s.campaign.checkpoint.blocking_s;
  const int64_t gpus = s.state.gpus();
  const double mtbf = s.model.interrupt_mtbf_s(gpus);
  const double daly = faults::daly_interval_s(delta, mtbf);
  // The sweep must start at or above the checkpoint's own length (validate_checkpoint).
  const double floor_s =
      std::max(s.campaign.checkpoint.blocking_s + s.campaign.checkpoint.persist_s, s.campaign.spec.iteration_time_s);
  const double lo = o.min_s.value_or(std::max(floor_s, daly / 8));
  const double hi = o.max_s.value_or(std::max(lo * 2, daly * 8));
  if (o.points < 2) throw config::ConfigError("--points must be ≥ 2");
  Progress progress("checkpoint intervals", o.points, "intervals"); // stderr unless --quiet
  if (progress.shown()) s.campaign.on_seed_done = [&progress](int64_t done, int64_t) { progress.update(done); };
  const auto result = faults::tune_checkpoint(s.campaign, faults::geometric_intervals(lo, hi, o.points));
  nlohmann::json j = setup_json(s, o);
  j["result"] = detail::tuner_json(result);
  if (!o.out.empty()) {
    const std::filesystem::path dir(o.out);
    make_output_dir(o.out, "--out");
    write_file_atomically((dir / "tune_checkpoint.json").string(), j.dump(2) + "\n");
    write_file_atomically((dir / "tune_checkpoint.csv").string(), detail::sweep_csv(result));
    plot(dir, {"--sweep", (dir / "tune_checkpoint.csv").string()});
  }
  const double restart_s =
      s.campaign.recovery.restart_s + faults::comm_init_s(s.campaign.recovery.comm_init, s.campaign.shape);
  std::cerr << detail::degenerate_regime_warnings(result.points[result.best].ettr.mean, restart_s, mtbf);
  if (o.json)
    std::cout << j.dump(2) << "\n";
  else
    std::cout << iteration_line(s) << detail::tuner_table(s.job.name, result, s.campaign);
  return 0;
}

} // namespace

void add_fault_commands(CLI::App& app, Action& action) {
  auto campaign_opts = std::make_shared<FaultOptions>();
  CLI::App* campaign = app.add_subcommand("campaign", "weeks of training under faults: ETTR, lost work, time by state");
  campaign->footer(
      "Figures: ETTR = training time / wall time (95% CI over seeds); lost work = training redone after each "
      "interruption (back to the last persisted checkpoint); checkpoints lost = checkpoints whose background persist "
      "an interruption cut short, so the restart fell back to an older one; recovery time = from a fault until "
      "training resumes. A warning on stderr marks a degenerate regime (ETTR near 0, a restart longer than the MTBF).");
  add_common(campaign, *campaign_opts);
  add_quiet_flag(*campaign);
  campaign->add_option("--checkpoint-interval", campaign_opts->interval_s,
                       "seconds of training between checkpoints (default: the recovery file's)");
  campaign->callback([&action, campaign_opts] {
    campaign_opts->job.check_usage();
    action = [campaign_opts] { return run_campaign_command(*campaign_opts); };
  });

  auto tune_opts = std::make_shared<FaultOptions>();
  CLI::App* tune = app.add_subcommand("tune-checkpoint", "sweep the checkpoint interval; compare with Young and Daly");
  tune->footer("Columns: interval_s = seconds of training between checkpoints; ETTR ± 95% over seeds; Daly-model = "
               "ETTR predicted by Daly's first-order model; * = not significantly worse than the best (paired over "
               "seeds). Young and Daly are 'consistent' when their interval lies in the simulated optimum's bracket, "
               "'not comparable' when ETTR is near 0 at every interval (see the warning on stderr).");
  add_common(tune, *tune_opts);
  add_quiet_flag(*tune);
  tune->add_option("--min", tune_opts->min_s, "shortest interval, s (default max(checkpoint time, Daly/8))");
  tune->add_option("--max", tune_opts->max_s, "longest interval, s (default 8 × Daly)");
  tune->add_option("--points", tune_opts->points, "intervals in the sweep (geometric)")->capture_default_str();
  tune->callback([&action, tune_opts] {
    tune_opts->job.check_usage();
    action = [tune_opts] { return run_tune_command(*tune_opts); };
  });
}

} // namespace twinscale::cli
