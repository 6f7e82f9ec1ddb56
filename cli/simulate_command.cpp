// `twinscale simulate`: lower a job, place it on the cluster's fabric and run it on the
// SimGrid model (flow mode) or the analytical model; print iteration time, tokens/s,
// TFLOP/s per GPU, MFU and where the time goes (aggregate and per pipeline stage).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string_view>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/job_args.hpp"
#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "schedules/calibration.hpp"
#include "schedules/schedule.hpp"
#include "schedules/trace.hpp"
#include "sim/simulate.hpp"
#include "topology/fabric.hpp"
#include "topology/placement.hpp"
#ifdef TWINSCALE_HAVE_FAULTS
#include "config/fault_file.hpp"
#include "faults/fabric_targets.hpp"
#endif

namespace twinscale::cli {

namespace {

struct SimulateArgs {
  JobArgs job;
  std::string cluster;
  std::string mode = "flow";
  std::string placement = "linear";
  std::string algorithm = "ring";
  uint64_t seed = 1;
  int channels = 2;
  bool no_aggregate = false;
  bool speed_variation = false;
  std::string trace_file;
  std::string ranks;
  std::string per_rank_csv;
  std::string faults_file;
  std::string calibration_file;
  bool json = false;
};

/// "0-7,64,100-103" → sorted ranks; usage errors name the bad piece.
std::vector<int64_t> parse_ranks(const std::string& text, int64_t world) {
  std::set<int64_t> out;
  std::stringstream ss(text);
  std::string piece;
  while (std::getline(ss, piece, ',')) {
    if (piece.empty()) continue;
    int64_t a = 0, b = 0;
    const auto dash = piece.find('-');
    try {
      size_t used = 0;
      if (dash == std::string::npos) {
        a = b = std::stoll(piece, &used);
        if (used != piece.size()) throw std::invalid_argument(piece);
      } else {
        a = std::stoll(piece.substr(0, dash), &used);
        if (used != dash) throw std::invalid_argument(piece);
        b = std::stoll(piece.substr(dash + 1), &used);
        if (used != piece.size() - dash - 1) throw std::invalid_argument(piece);
      }
    } catch (const std::exception&) {
      throw config::ConfigError("--ranks: '" + piece + "' is not a rank or a range A-B (e.g. 0-7,64)");
    }
    if (a < 0 || b < a || b >= world)
      throw config::ConfigError("--ranks: '" + piece + "' outside 0.." + std::to_string(world - 1));
    for (int64_t r = a; r <= b; ++r) out.insert(r);
  }
  return {out.begin(), out.end()};
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

nlohmann::json breakdown_json(const sim::Breakdown& b) {
  return {{"compute_s", b.compute_s},       {"exposed_tp_s", b.exposed_tp_s}, {"exposed_pp_s", b.exposed_pp_s},
          {"exposed_dp_s", b.exposed_dp_s}, {"bubble_s", b.bubble_s},         {"idle_s", b.idle_s}};
}

std::string report_json(const sim::SimReport& r, const schedules::Schedule& s, const std::string& cluster,
                        const SimulateArgs& a) {
  nlohmann::json j;
  j["job"] = s.job.name;
  j["cluster"] = cluster;
  j["gpus"] = s.world();
  j["mode"] = std::string(sim::to_string(r.mode));
  j["seed"] = a.seed;
  j["placement"] = a.placement;
  j["completed"] = r.completed;
  if (!r.completed) j["failure"] = r.failure;
  j["iteration_time_s"] = r.iteration_time_s;
  j["makespan_s"] = r.makespan_s;
  j["tokens_per_s"] = r.tokens_per_s;
  j["tflops_per_gpu"] = r.tflops_per_gpu;
  j["mfu"] = r.mfu;
  j["breakdown"] = breakdown_json(r.breakdown);
  nlohmann::json stages = nlohmann::json::array();
  for (size_t i = 0; i < r.per_stage.size(); ++i) {
    auto b = breakdown_json(r.per_stage[i]);
    b["stage"] = i;
    stages.push_back(b);
  }
  j["per_stage"] = stages;
  nlohmann::json inc = nlohmann::json::array();
  for (const auto& i : r.incidents)
    inc.push_back({{"rank", i.rank}, {"op", i.op_index}, {"name", i.name}, {"failed", i.failed},
                   {"at_s", i.at_s}, {"stalled_s", i.stalled_s}});
  j["incidents"] = inc;
  j["stats"] = {{"aggregated", r.aggregated}, {"executed_ranks", r.executed_ranks},
                {"ops_executed", r.ops_executed}, {"flows", r.flows}};
  return j.dump(2) + "\n";
}

std::string report_table(const sim::SimReport& r, const schedules::Schedule& s, const std::string& cluster,
                         const SimulateArgs& a) {
  std::ostringstream o;
  o << "job " << s.job.name << " on " << cluster << ": " << s.world() << " GPUs (tp " << s.layout.tp << ", pp "
    << s.layout.pp << ", dp " << s.layout.dp << "), " << sim::to_string(r.mode) << " mode, placement " << a.placement
    << ", seed " << a.seed << "\n";
  if (!r.completed) o << "JOB FAILED: " << r.failure << "\n";
  o << "  iteration time     " << fixed(r.iteration_time_s, 6) << " s\n";
  o << "  tokens/s           " << fixed(r.tokens_per_s, 1) << "\n";
  o << "  TFLOP/s per GPU    " << fixed(r.tflops_per_gpu, 2) << "\n";
  o << "  MFU                " << fixed(100.0 * r.mfu, 2) << " %\n";
  auto row = [&](const std::string& name, double v) {
    const double share = r.iteration_time_s > 0 ? 100.0 * v / r.makespan_s : 0.0;
    char buf[128];
    std::snprintf(buf, sizeof buf, "  %-18s %12.6f s %7.2f %%\n", name.c_str(), v, share);
    o << buf;
  };
  o << "breakdown (average over ranks, whole run)\n";
  row("compute", r.breakdown.compute_s);
  row("exposed TP comm", r.breakdown.exposed_tp_s);
  row("exposed PP comm", r.breakdown.exposed_pp_s);
  row("exposed DP comm", r.breakdown.exposed_dp_s);
  row("pipeline bubble", r.breakdown.bubble_s);
  row("idle", r.breakdown.idle_s);
  o << "per pipeline stage (seconds)\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %5s %12s %12s %12s %12s %12s %12s\n", "stage", "compute", "exp_tp", "exp_pp",
                "exp_dp", "bubble", "idle");
  o << buf;
  for (size_t i = 0; i < r.per_stage.size(); ++i) {
    const auto& b = r.per_stage[i];
    std::snprintf(buf, sizeof buf, "  %5zu %12.6f %12.6f %12.6f %12.6f %12.6f %12.6f\n", i, b.compute_s,
                  b.exposed_tp_s, b.exposed_pp_s, b.exposed_dp_s, b.bubble_s, b.idle_s);
    o << buf;
  }
  if (!r.incidents.empty()) {
    o << "incidents (" << r.incidents.size() << ")\n";
    size_t shown = 0;
    for (const auto& i : r.incidents) {
      if (++shown > 20) {
        o << "  …\n";
        break;
      }
      o << "  rank " << i.rank << " op " << i.op_index << " (" << i.name << ") "
        << (i.failed ? "FAILED" : "stalled " + fixed(i.stalled_s, 6) + " s") << " at " << fixed(i.at_s, 6) << " s\n";
    }
  }
  return o.str();
}

std::string per_rank_csv(const sim::SimReport& r) {
  std::ostringstream o;
  o << "rank,tp,pp,dp,forward_s,backward_s,comm_wait_s\n";
  char buf[160];
  for (const auto& t : r.per_rank) {
    std::snprintf(buf, sizeof buf, "%lld,%lld,%lld,%lld,%.9f,%.9f,%.9f\n", static_cast<long long>(t.rank),
                  static_cast<long long>(t.tp), static_cast<long long>(t.pp), static_cast<long long>(t.dp),
                  t.forward_s, t.backward_s, t.comm_wait_s);
    o << buf;
  }
  return o.str();
}


int run_simulate(const SimulateArgs& a) {
  schedules::JobSpec job = a.job.load();
  const std::string cluster_name = a.cluster.empty() ? job.cluster : a.cluster;
  if (cluster_name.empty())
    throw config::ConfigError(a.job.source() + ": no cluster (give --cluster NAME|FILE or `cluster` in the job)");
  topology::ClusterSpec spec = config::load_cluster(cluster_name);
  spec.gpus = job.parallel.gpus(); // the fabric is built for the job's GPUs
  topology::Fabric fabric(spec);

  schedules::LoweringTarget target;
  target.gpu_memory_bytes = spec.gpu.memory_bytes > 0 ? spec.gpu.memory_bytes : target.gpu_memory_bytes;
  const schedules::Schedule schedule = schedules::lower(job, target);

  topology::PlacementPolicy policy = topology::PlacementPolicy::Linear;
  if (a.placement == "tor-aware") policy = topology::PlacementPolicy::TorAware;
  else if (a.placement == "random") policy = topology::PlacementPolicy::Random;
  const auto gpus = topology::place(fabric, {schedule.layout.tp, schedule.layout.dp, schedule.layout.pp}, policy, a.seed);

  sim::SimOptions o;
  o.mode = a.mode == "analytic" ? sim::SimMode::Analytic : sim::SimMode::Flow;
  o.seed = a.seed;
  o.channels = a.channels;
  o.aggregate = !a.no_aggregate;
  o.speed_variation = a.speed_variation;
  o.all_reduce_algorithm = a.algorithm == "tree" ? sim::CollectiveAlgorithm::Tree : sim::CollectiveAlgorithm::Ring;
  schedules::CalibrationTable calibration;
  if (!a.calibration_file.empty()) {
    calibration = schedules::read_calibration_file(a.calibration_file);
    o.calibration = &calibration;
  }
#ifdef TWINSCALE_HAVE_FAULTS
  faults::FaultPlan plan;
  if (!a.faults_file.empty()) {
    plan = config::load_fault_plan(a.faults_file);
    config::check_fault_plan(plan, faults::FabricTargets(fabric), a.faults_file);
    o.faults = &plan;
  }
#else
  if (!a.faults_file.empty()) throw config::ConfigError("--faults: this build has no faults layer");
#endif
  if (!a.trace_file.empty()) {
    o.record_trace = true;
    if (!a.ranks.empty()) o.trace_ranks = parse_ranks(a.ranks, schedule.world());
  }
  std::cerr << "twinscale simulate: " << schedule.world() << " ranks, " << schedule.programs.size()
            << " programs, fabric " << fabric.links().size() << " links; " << a.mode << " mode\n";
  const sim::SimReport r = sim::simulate(schedule, fabric, gpus, o);
  std::cerr << "twinscale simulate: " << r.executed_ranks << " ranks executed, " << r.ops_executed << " ops, "
            << r.flows << " flows, wall " << fixed(r.wall_s, 3) << " s\n";

  if (!a.trace_file.empty()) {
    std::ostringstream t;
    schedules::write_chrome_trace(r.trace, schedule, t);
    write_file_atomically(a.trace_file, t.str());
  }
  if (!a.per_rank_csv.empty()) write_file_atomically(a.per_rank_csv, per_rank_csv(r));
  std::cout << (a.json ? report_json(r, schedule, cluster_name, a) : report_table(r, schedule, cluster_name, a));
  return 0; // a job that failed under faults is a result ("completed": false), not an error
}

} // namespace

void add_simulate_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate one training iteration of a job on a model of its cluster");
  args->job.add_to(*cmd);
  cmd->add_option("--cluster", args->cluster, "cluster preset or file (default: the job's)");
  cmd->add_option("--mode", args->mode, "flow (SimGrid, contention) or analytic (closed forms)")
      ->check(CLI::IsMember({"flow", "analytic"}));
  cmd->add_option("--placement", args->placement, "rank placement")->check(CLI::IsMember({"linear", "tor-aware", "random"}));
  cmd->add_option("--seed", args->seed, "seed of ECMP hashing and random placement");
  cmd->add_option("--algorithm", args->algorithm, "all-reduce algorithm")->check(CLI::IsMember({"ring", "tree"}));
  cmd->add_option("--channels", args->channels, "NCCL channels (queue pairs per transfer)")->check(CLI::Range(1, 64));
  cmd->add_flag("--no-aggregate", args->no_aggregate, "execute every rank and every ring step (small jobs)");
  cmd->add_flag("--speed-variation", args->speed_variation,
                "per-GPU speed drawn per seed (catalogue speed_sigma); compute at the slowest GPU's pace");
  cmd->add_option("--trace", args->trace_file, "write a Chrome trace (Perfetto) of the executed ranks");
  cmd->add_option("--ranks", args->ranks, "ranks to trace, e.g. 0-7,64");
  cmd->add_option("--per-rank-csv", args->per_rank_csv, "write rank,tp,pp,dp,forward_s,backward_s,comm_wait_s");
  cmd->add_option("--faults", args->faults_file, "fault plan (TOML) to inject");
  cmd->add_option("--calibration", args->calibration_file, "calibration table (JSON) overriding the device model");
  cmd->add_flag("--json", args->json, "JSON output");
  cmd->callback([args, &action]() {
    args->job.check_usage();
    action = [args]() { return run_simulate(*args); };
  });
}

} // namespace twinscale::cli
