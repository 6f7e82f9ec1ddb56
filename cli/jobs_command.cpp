// `twinscale simulate-jobs STUDY.toml`: several jobs at once on one fabric (flow mode).
// Places every job (config/jobs_study.cpp, topology/multi_placement.hpp), runs them
// together, then each alone on the same GPUs, and prints each job's iteration time
// alone and together, its slowdown, and the links the jobs fight over (the network link
// directions that carry bytes of two jobs or more, most shared first).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/job_args.hpp"
#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "config/jobs_study.hpp"
#include "config/scenario.hpp"
#include "schedules/schedule.hpp"
#include "sim/multi_job.hpp"
#include "topology/fabric.hpp"

namespace twinscale::cli {

namespace {

struct JobsArgs {
  std::string study;
  int top = 10;
  bool json = false;
  std::vector<std::string> set; // --set cluster.KEY=VALUE
};

/// The study's cluster edits: `--set cluster.KEY=VALUE` only (each job's keys live in the
/// job file or preset its [[job]] table names, so a bare job key would be ambiguous).
std::vector<config::KeyOverride> study_cluster_edits(const JobsArgs& a) {
  for (const std::string& text : a.set) {
    const config::KeyOverride o = config::parse_key_override(text);
    if (!(o.path.size() > 1 && o.path.front() == "cluster"))
      throw config::ConfigError("--set " + text +
                                ": simulate-jobs takes cluster keys only, as --set cluster.KEY=VALUE (the jobs' "
                                "keys are in the job files or presets the study's [[job]] tables name)");
  }
  return cluster_key_overrides(a.set);
}

int run_jobs(const JobsArgs& a) {
  const config::JobsStudy study = config::load_jobs_study(a.study);
  const config::ClusterFile cluster_file =
      config::load_cluster_file(study.cluster, study_cluster_edits(a)); // read once
  topology::ClusterSpec cluster = cluster_file.cluster;
  int64_t total = 0;
  for (const auto& j : study.jobs) total += j.placement.gpus;
  if (cluster.gpus <= 0) cluster.gpus = total; // a cluster file without `gpus`: just the jobs
  const topology::Fabric fabric(cluster);
  std::vector<topology::JobRequest> requests;
  for (const auto& j : study.jobs) requests.push_back(j.placement);
  const auto placements = topology::place_jobs(fabric, requests);

  std::vector<std::unique_ptr<schedules::Schedule>> schedules;
  std::vector<sim::JobOnFabric> jobs;
  const schedules::LoweringTarget target = config::lowering_target(cluster); // as simulate's
  for (size_t j = 0; j < study.jobs.size(); ++j) {
    schedules.push_back(std::make_unique<schedules::Schedule>(schedules::lower(study.jobs[j].job, target)));
    jobs.push_back({study.jobs[j].name, schedules.back().get(), placements[j], study.jobs[j].start_s});
  }
  sim::SimOptions flow;
  flow.mode = sim::SimMode::Flow;
  const sim::SimOptions options = config::cluster_sim_options(cluster_file, flow, study.seed); // as simulate's

  Progress progress("simulate-jobs runs", static_cast<int64_t>(jobs.size()) + 1, "runs"); // together, then each alone
  const sim::MultiJobReport together = sim::simulate_jobs(jobs, fabric, options);
  progress.update(1);
  std::vector<sim::JobOutcome> alone;
  for (const auto& j : jobs) {
    alone.push_back(sim::simulate_jobs({j}, fabric, options).jobs.at(0));
    progress.update(static_cast<int64_t>(alone.size()) + 1);
  }
  progress.finish();

  const size_t top = std::min(static_cast<size_t>(std::max(a.top, 0)), together.shared_links.size());
  if (a.json) {
    nlohmann::json out;
    out["study"] = a.study;
    out["cluster"] = study.cluster;
    out["congestion_control"] = topology::congestion_control_name(options.network.congestion_control);
    for (size_t j = 0; j < jobs.size(); ++j) {
      const auto& t = together.jobs[j];
      out["jobs"].push_back({{"name", t.name},
                             {"gpus", study.jobs[j].placement.gpus},
                             {"placement", std::string(config::placement_name(study.jobs[j].placement.policy))},
                             {"iteration_time_alone_s", alone[j].iteration_time_s},
                             {"iteration_time_together_s", t.iteration_time_s},
                             {"slowdown", t.iteration_time_s / alone[j].iteration_time_s},
                             {"completed", t.completed && alone[j].completed}});
    }
    out["shared_link_directions"] = together.shared_links.size();
    for (size_t i = 0; i < top; ++i) {
      const auto& s = together.shared_links[i];
      out["shared_links"].push_back(
          {{"link", fabric.link_name(s.link)}, {"direction", s.up ? "up" : "down"}, {"bytes_by_job", s.bytes_by_job}});
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("%d jobs on %s (%lld GPUs), congestion control %s\n", static_cast<int>(jobs.size()), cluster.name.c_str(),
              static_cast<long long>(fabric.gpus()),
              topology::congestion_control_name(options.network.congestion_control));
  std::printf("%-16s %6s %-10s %12s %12s %9s\n", "job", "gpus", "placement", "alone s", "together s", "slowdown");
  for (size_t j = 0; j < jobs.size(); ++j) {
    const auto& t = together.jobs[j];
    std::printf("%-16s %6lld %-10s %12.6f %12.6f %8.3fx%s\n", t.name.c_str(),
                static_cast<long long>(study.jobs[j].placement.gpus),
                std::string(config::placement_name(study.jobs[j].placement.policy)).c_str(), alone[j].iteration_time_s,
                t.iteration_time_s, t.iteration_time_s / alone[j].iteration_time_s,
                t.completed ? "" : ("  failed: " + t.failure).c_str());
  }
  std::printf("\nlinks the jobs share: %zu link directions", together.shared_links.size());
  if (top == 0) {
    std::printf("\n");
    return 0;
  }
  std::printf(", the %zu most shared (GB per job):\n", top);
  for (size_t i = 0; i < top; ++i) {
    const auto& s = together.shared_links[i];
    std::printf("  %-36s %-4s", fabric.link_name(s.link).c_str(), s.up ? "up" : "down");
    for (double b : s.bytes_by_job) std::printf(" %10.3f", b / 1e9);
    std::printf("\n");
  }
  return 0;
}

} // namespace

void add_jobs_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<JobsArgs>();
  auto* cmd = app.add_subcommand("simulate-jobs", "several jobs at once on one fabric: slowdown and shared links");
  cmd->add_option("study", args->study, "study file (TOML: cluster and [[job]] tables)")->required();
  cmd->add_option("--top", args->top, "shared links to list (default 10)");
  cmd->add_flag("--json", args->json, "JSON instead of the table");
  cmd->add_option("--set", args->set,
                  "cluster.KEY=VALUE: change a key of the study's cluster before it is checked, as if its file said "
                  "it (repeatable), e.g. --set cluster.server.nics=4")
      ->allow_extra_args(false)
      ->type_name("cluster.KEY=VALUE");
  add_quiet_flag(*cmd);
  cmd->callback([args, &action]() { action = [args]() { return run_jobs(*args); }; });
}

} // namespace twinscale::cli
