// `twinscale simulate`: lower a job, place it on the cluster's fabric and run it on the
// SimGrid model (flow mode) or the analytical model; print iteration time, tokens/s,
// TFLOP/s per GPU, MFU and where the time goes (aggregate and per pipeline stage).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cli/checked_options.hpp"
#include "cli/commands.hpp"
#include "cli/job_args.hpp"
#include "cli/layout_notation.hpp"
#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "config/gpu_speeds.hpp"
#include "config/scenario.hpp"
#include "records/run_dir.hpp"
#include "schedules/binary_trace.hpp"
#include "schedules/calibration_coverage.hpp"
#include "schedules/estimate.hpp"
#include "schedules/input_file.hpp"
#include "schedules/output_file.hpp"
#include "schedules/schedule.hpp"
#include "schedules/trace.hpp"
#include "sim/estimate.hpp"
#include "sim/link_csv.hpp"
#include "sim/per_rank_csv.hpp"
#include "sim/simulate.hpp"

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
  bool one_thread = false;
  bool ideal_collectives = false;
  bool every_rank = false;
  std::string gpu_speed_dist;
  std::string gpu_speed_file;
  uint64_t speed_seed = 1;
  bool speed_variation = false;
  double slow_host_fraction = 0;
  double slow_host_factor = 1;
  std::string trace_file;
  std::string ranks;
  std::string per_rank_csv;
  std::string link_csv;
  std::string faults_file;
  std::string calibration_file;
  int64_t hang_rank = -1;
  double hang_at_s = 0;
  std::string run_dir;
  bool json = false;
};

/// The per-rank state files of a hung simulated run, the records a real run leaves
/// (records/run_dir.hpp), so `twinscale diagnose DIR` reads both alike; each rank's host
/// is its server, named as the run's trace names it (sim::host_names).
void write_sim_run_dir(const std::string& dir, const sim::SimReport& r, const config::Scenario& scenario) {
  const std::vector<std::string> hosts = sim::host_names(scenario.fabric(), scenario.gpu_of_rank());
  std::vector<records::RankState> states = r.hang_states;
  for (records::RankState& st : states) st.host = hosts[static_cast<size_t>(st.rank)];
  records::write_rank_states(dir, states);
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

/// A cluster file describes a design (servers, NICs, rails, switches) and a size; the
/// fabric is built for the job's GPUs. When the job needs more GPUs than the file
/// describes, say so: the run is on a larger machine of the same design, not on the file's.
void explain_fabric_size(const config::Scenario& scenario, int64_t job_gpus) {
  const int64_t described = scenario.described_gpus();
  if (described > 0 && job_gpus > described)
    std::cerr << "twinscale simulate: note: cluster '" << scenario.cluster_name() << "' describes " << described
              << " GPUs; the job needs " << job_gpus << ", so the fabric is built for " << job_gpus
              << " GPUs of the same server, NIC and switch design (a larger machine than the file's)\n";
}

/// FlashAttention-2 has no kernels for compute capability 10.0 and later (it runs its SM80
/// code there, at a fraction of cuDNN's rate, presets/hardware/gpus.toml); stacks on
/// Transformer Engine run cuDNN's fused attention on those GPUs. A job that asks for
/// FlashAttention-2 there is costed as asked, and told.
void explain_attention_backend(const config::Scenario& scenario) {
  const topology::GpuSpec& gpu = scenario.cluster().gpu;
  if (gpu.compute_capability < 100 || !gpu.kernels.cudnn.given()) return;
  for (const schedules::Program& p : scenario.schedule().programs)
    for (const schedules::Op& op : p.ops)
      if (op.kernel == schedules::Kernel::FlashAttention2) {
        std::cerr << "twinscale simulate: note: the job runs FlashAttention-2 on " << gpu.model
                  << ", where it has no native kernels (forward " << fixed(gpu.kernels.flash.fwd_efficiency, 3)
                  << " of peak at 4,096 keys against cuDNN's fused attention's "
                  << fixed(gpu.kernels.cudnn.fwd_efficiency, 3)
                  << "); stacks on Transformer Engine run cuDNN's there: "
                     "--set schedule.operators.attention_backend=cudnn\n";
        return;
      }
}

/// A completed iteration must respect the hardware: a finite, positive time and an MFU of
/// at most 100 % of the GPUs' peak. An answer past that comes from an input that makes
/// the hardware faster than it is (speed factors > 1, a calibration table of impossibly
/// fast kernels) or a device parameter out of range (peak_flops = 1e-300): refused,
/// naming the inputs of this run that can cause it, before any output is written.
void check_physics(const sim::SimReport& r, const SimulateArgs& a, const std::string& cluster_name) {
  if (!r.completed) return;
  const bool finite_time = std::isfinite(r.iteration_time_s) && r.iteration_time_s > 0;
  if (finite_time && std::isfinite(r.mfu) && r.mfu <= 1.0) return;
  std::string suspects = "the cluster '" + cluster_name + "' (its GPUs' peak_flops and memory bandwidth)";
  if (!a.gpu_speed_file.empty()) suspects += ", --gpu-speed-file " + a.gpu_speed_file + " (factors above 1)";
  if (!a.gpu_speed_dist.empty()) suspects += ", --gpu-speed-dist " + a.gpu_speed_dist;
  if (a.slow_host_fraction > 0) suspects += ", --slow-host-factor";
  if (!a.calibration_file.empty()) suspects += ", --calibration " + a.calibration_file + " (kernel times)";
  const std::string what = !finite_time ? "an iteration time of " + std::to_string(r.iteration_time_s) + " s"
                                        : "an MFU of " + fixed(100.0 * r.mfu, 1) + " %, above the GPUs' peak";
  throw config::ConfigError("simulate: the result breaks physics: " + what +
                            "; an input makes the hardware faster than it is or holds a value out of range — "
                            "check " +
                            suspects);
}

nlohmann::json breakdown_json(const sim::Breakdown& b) {
  return {{"compute_s", b.compute_s},
          {"exposed_tp_s", b.exposed_tp_s},
          {"exposed_ep_s", b.exposed_ep_s},
          {"exposed_pp_s", b.exposed_pp_s},
          {"exposed_dp_s", b.exposed_dp_s},
          {"bubble_s", b.bubble_s},
          {"idle_s", b.idle_s}};
}

/// The per-stage table; an EP column when the job has expert parallelism.
void per_stage_table(const sim::SimReport& r, bool ep, std::ostream& o) {
  o << "per pipeline stage (seconds)\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %5s %12s %12s%s %12s %12s %12s %12s\n", "stage", "compute", "exp_tp",
                ep ? "       exp_ep" : "", "exp_pp", "exp_dp", "bubble", "idle");
  o << buf;
  for (size_t i = 0; i < r.per_stage.size(); ++i) {
    const auto& b = r.per_stage[i];
    char ep_cell[32] = "";
    if (ep) std::snprintf(ep_cell, sizeof ep_cell, " %12.6f", b.exposed_ep_s);
    std::snprintf(buf, sizeof buf, "  %5zu %12.6f %12.6f%s %12.6f %12.6f %12.6f %12.6f\n", i, b.compute_s,
                  b.exposed_tp_s, ep_cell, b.exposed_pp_s, b.exposed_dp_s, b.bubble_s, b.idle_s);
    o << buf;
  }
}

using Coverage = std::optional<schedules::CalibrationCoverage>;

std::string report_json(const sim::SimReport& r, const schedules::Schedule& s, const std::string& cluster,
                        const std::string& own_cluster_name, const SimulateArgs& a, const Coverage& cov) {
  nlohmann::json j;
  j["job"] = s.job.name;
  j["cluster"] = cluster; // as given: a preset name or a file
  j["cluster_name"] = own_cluster_name;
  j["gpus"] = s.world();
  const auto& par = s.job.parallel; // Megatron's names and order
  j["layout"] = {{"tp", par.tp}, {"cp", par.cp}, {"ep", par.ep}, {"dp", par.dp}, {"pp", par.pp}};
  j["mode"] = std::string(sim::to_string(r.mode));
  j["seed"] = a.seed;
  j["placement"] = a.placement;
  j["completed"] = r.completed;
  if (!r.completed) j["failure"] = r.failure;
  if (a.hang_rank >= 0) {
    int64_t waiting = 0;
    for (const auto& h : r.hang_states) waiting += h.waiting.empty() ? 0 : 1;
    j["hang"] = {{"rank", a.hang_rank}, {"at_s", a.hang_at_s}, {"waiting_ranks", waiting}};
  }
  // an incomplete run has no iteration: no time, throughput or MFU (null), only its makespan
  const auto if_done = [&](double v) { return r.completed ? nlohmann::json(v) : nlohmann::json(nullptr); };
  j["iteration_time_s"] = if_done(r.iteration_time_s);
  j["makespan_s"] = r.makespan_s;
  j["tokens_per_s"] = if_done(r.tokens_per_s);
  j["tflops_per_gpu"] = if_done(r.tflops_per_gpu);
  j["mfu"] = if_done(r.mfu);
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
    inc.push_back({{"rank", i.rank},
                   {"op", i.op_index},
                   {"name", i.name},
                   {"failed", i.failed},
                   {"at_s", i.at_s},
                   {"stalled_s", i.stalled_s}});
  j["incidents"] = inc;
  j["stats"] = {{"aggregated", r.aggregated},
                {"executed_ranks", r.executed_ranks},
                {"replica_classes", r.replica_classes},
                {"ops_executed", r.ops_executed},
                {"flows", r.flows}};
  if (cov)
    j["calibration_coverage"] = {
        {"ops", cov->ops},         {"measured_ops", cov->measured_ops},         {"op_share", cov->op_share()},
        {"seconds", cov->seconds}, {"measured_seconds", cov->measured_seconds}, {"time_share", cov->time_share()}};
  return j.dump(2) + "\n";
}

std::string report_table(const sim::SimReport& r, const schedules::Schedule& s, const std::string& cluster,
                         const SimulateArgs& a, const Coverage& cov) {
  std::ostringstream o;
  o << "job " << s.job.name << " on " << cluster << ": " << s.world() << " GPUs (" << layout_text(s.job.parallel)
    << "), " << sim::to_string(r.mode) << " mode, placement " << a.placement << ", seed " << a.seed << "\n";
  if (!r.completed) {
    o << "JOB FAILED: " << r.failure << "\n";
    o << "  iteration          did not complete: no iteration time, throughput or MFU (exit " << kExitIncomplete
      << ")\n";
    o << "  makespan           " << fixed(r.makespan_s, 6) << " s (until the last op that ran)\n";
  } else {
    o << "  iteration time     " << fixed(r.iteration_time_s, 6) << " s\n";
    o << "  tokens/s           " << fixed(r.tokens_per_s, 1) << "\n";
    o << "  TFLOP/s per GPU    " << fixed(r.tflops_per_gpu, 2) << "\n";
    o << "  MFU                " << fixed(100.0 * r.mfu, 2) << " %\n";
  }
  if (cov)
    o << "  calibration        " << fixed(100.0 * cov->op_share(), 1) << " % of ops (" << cov->measured_ops << "/"
      << cov->ops << "), " << fixed(100.0 * cov->time_share(), 1) << " % of op time from measured entries\n";
  auto row = [&](const std::string& name, double v) {
    const double share = r.iteration_time_s > 0 ? 100.0 * v / r.makespan_s : 0.0;
    char buf[128];
    std::snprintf(buf, sizeof buf, "  %-18s %12.6f s %7.2f %%\n", name.c_str(), v, share);
    o << buf;
  };
  o << "breakdown (average over ranks, whole run)\n";
  row("compute", r.breakdown.compute_s);
  const bool ep = s.job.parallel.ep > 1;
  row(s.job.parallel.cp > 1 ? "exposed TP+CP comm" : "exposed TP comm", r.breakdown.exposed_tp_s); // CP: the ring
  if (ep) row("exposed EP comm", r.breakdown.exposed_ep_s); // the MoE all-to-alls
  row("exposed PP comm", r.breakdown.exposed_pp_s);
  row("exposed DP comm", r.breakdown.exposed_dp_s);
  row("pipeline bubble", r.breakdown.bubble_s);
  row("idle", r.breakdown.idle_s);
  per_stage_table(r, ep, o);
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

/// Bytes of Chrome trace JSON per event (an op event with its args, measured: 290 to 300
/// on tiny-1f1b and GPT-175B), rounded up.
constexpr double kChromeTraceBytesPerEvent = 320;

/// Refuses, before the run, a trace recorded in memory that would not fit: the events of
/// the traced ranks (each rank's whole program) held as TraceEvents and, for Chrome JSON,
/// the text built and copied once before it is written.
void check_trace_fits(const SimulateArgs& a, const schedules::Schedule& schedule, const std::vector<int64_t>& ranks) {
  double events = 0;
  for (const int64_t r : ranks) events += static_cast<double>(schedule.program(r).ops.size());
  const bool json = !schedules::is_binary_trace_path(a.trace_file);
  const double per_event = sizeof(schedules::TraceEvent) + (json ? 2 * kChromeTraceBytesPerEvent : 16);
  const schedules::MemoryRoom room = schedules::memory_room();
  if (events * per_event <= room.bytes) return;
  throw config::ConfigError(
      "--trace " + a.trace_file + (a.ranks.empty() ? std::string() : " --ranks " + a.ranks) + ": " +
      std::to_string(ranks.size()) + " ranks of about " + std::to_string(static_cast<long long>(events)) + " events" +
      (json ? ", about " + schedules::format_bytes(events * kChromeTraceBytesPerEvent) + " of Chrome JSON," : "") +
      " need about " + schedules::format_bytes(events * per_event) +
      " of memory (estimate), but this process may use " + schedules::format_bytes(room.bytes) + " (" + room.source +
      "); trace fewer ranks (--ranks)" +
      (json || !a.ranks.empty() ? ", or every rank into FILE.tstrace without --ranks (streamed to the file)" : ""));
}

/// The trace of `a` on `scenario`; returns whether it is streamed. A calibrated run
/// records the trace of its executed ranks for the coverage report. A .tstrace of every
/// executed rank is streamed to its file during the run; chosen ranks (--ranks) and
/// Chrome traces are recorded in memory and written after it, so their size is checked.
bool set_up_trace(const SimulateArgs& a, config::Scenario& scenario) {
  const schedules::Schedule& schedule = scenario.schedule();
  const bool streamed = !a.trace_file.empty() && schedules::is_binary_trace_path(a.trace_file) && a.ranks.empty();
  if (streamed) scenario.stream_binary_trace(a.trace_file);
  if ((!a.trace_file.empty() && !streamed) || !a.calibration_file.empty()) {
    const std::vector<int64_t> ranks =
        a.ranks.empty() ? std::vector<int64_t>{} : parse_ranks(a.ranks, schedule.world());
    if (!a.trace_file.empty() && !streamed) {
      std::vector<int64_t> traced = ranks;
      if (traced.empty() && (a.no_aggregate || a.every_rank)) // every rank is executed, and traced
        for (int64_t r = 0; r < schedule.world(); ++r) traced.push_back(r);
      check_trace_fits(a, schedule, traced);
    }
    scenario.record_trace(ranks);
  }
  return streamed;
}

int run_simulate(const SimulateArgs& a) {
  schedules::check_distinct_files({{"JOB", a.job.file()},
                                   {"--cluster", a.cluster},
                                   {"--gpu-speed-file", a.gpu_speed_file},
                                   {"--faults", a.faults_file},
                                   {"--calibration", a.calibration_file}},
                                  {{"--trace", a.trace_file},
                                   {"--per-rank-csv", a.per_rank_csv},
                                   {"--link-csv", a.link_csv},
                                   {"--run-dir", a.run_dir}});
  config::ScenarioSpec spec;
  spec.job = a.job.load();
  spec.job_source = a.job.source();
  spec.cluster = a.cluster;
  spec.cluster_edits = a.job.cluster_edits();
  spec.gpu_memory_bytes = a.job.gpu_memory_override();
  spec.placement = config::parse_placement(a.placement, "--placement");
  spec.seed = a.seed;
  spec.sim.mode = config::parse_sim_mode(a.mode, "--mode");
  spec.sim.channels = a.channels;
  spec.sim.aggregate = !a.no_aggregate;
  if (a.one_thread) spec.sim.helper_thread = HelperThread::Off; // lowering, set-up and closed forms on this one
  spec.sim.every_rank = a.every_rank;
  spec.sim.speed_variation = a.speed_variation;
  spec.sim.slow_hosts.fraction = a.slow_host_fraction;
  spec.sim.slow_hosts.factor = a.slow_host_factor;
  spec.sim.all_reduce_algorithm = config::parse_all_reduce_algorithm(a.algorithm, "--algorithm");
  spec.sim.nccl.model_protocols = !a.ideal_collectives;
  spec.calibration_file = a.calibration_file;
  spec.faults_file = a.faults_file;
  if (!a.link_csv.empty() && spec.sim.mode != sim::SimMode::Flow)
    throw config::ConfigError("--link-csv: link utilisation comes from the flow engine; add --mode flow");
  spec.sim.link_loads = !a.link_csv.empty();
  spec.sim.per_rank = !a.per_rank_csv.empty(); // only the CSV reads every rank's figures
  spec.sim.show_progress = true;               // ops done and ETA on stderr unless --quiet (common/progress.hpp)
  config::Scenario scenario(spec);
  std::vector<double> speeds;
  if (!a.gpu_speed_dist.empty())
    speeds = config::draw_gpu_speeds(a.gpu_speed_dist, scenario.fabric().gpus(), a.speed_seed);
  if (!a.gpu_speed_file.empty()) {
    const auto from_file = config::read_gpu_speed_file(a.gpu_speed_file, scenario.fabric(), scenario.gpu_of_rank());
    if (speeds.empty())
      speeds = from_file;
    else
      for (size_t g = 0; g < speeds.size(); ++g) speeds[g] *= from_file[g];
  }
  if (!speeds.empty()) scenario.set_gpu_speed(std::move(speeds));
  if (!a.run_dir.empty() && a.hang_rank < 0)
    throw config::ConfigError(
        "--run-dir: simulate writes per-rank state files only for a hung run (add --hang-rank R)");
  if (!a.run_dir.empty()) {
    // made before the run: a trace streamed into it (--trace DIR/trace.tstrace) opens its file first
    make_output_dir(a.run_dir, "--run-dir");
  }
  if (a.hang_rank >= 0) scenario.set_hang(a.hang_rank, a.hang_at_s);
  const schedules::Schedule& schedule = scenario.schedule();
  const std::string& cluster_name = scenario.cluster_name();
  const bool streamed = set_up_trace(a, scenario);
  scenario.check_fits();
  std::cerr << "twinscale simulate: " << schedule.world() << " ranks, " << schedule.programs.size()
            << " programs, fabric " << scenario.fabric().links().size() << " links; " << a.mode << " mode\n";
  explain_fabric_size(scenario, schedule.world());
  explain_attention_backend(scenario);
  const sim::SimReport r = scenario.simulate();
  std::cerr << "twinscale simulate: " << r.executed_ranks << " ranks executed";
  if (r.replica_classes > 0) // docs/simulator.md, "Every rank by classes of identical replicas"
    std::cerr << " (one replica of each of " << r.replica_classes << " classes of identical replicas, standing for all "
              << schedule.world() << "; TWINSCALE_PER_OP=1 executes every one)";
  std::cerr << ", " << r.ops_executed << " ops, " << r.flows << " flows, wall " << fixed(r.wall_s, 3) << " s\n";
  check_physics(r, a, cluster_name);

  if (!a.trace_file.empty() && !streamed) {
    if (schedules::is_binary_trace_path(a.trace_file)) {
      schedules::write_binary_trace(r.trace, schedule, a.trace_file);
    } else {
      std::ostringstream t;
      schedules::write_chrome_trace(r.trace, schedule, t);
      write_file_atomically(a.trace_file, t.str());
    }
  }
  if (!a.per_rank_csv.empty()) write_file_atomically(a.per_rank_csv, sim::per_rank_csv(r));
  if (!a.link_csv.empty()) write_file_atomically(a.link_csv, sim::link_load_csv(r, scenario.fabric()));
  if (a.hang_rank >= 0) {
    std::cerr << "twinscale simulate: "
              << (r.completed
                      ? "rank " + std::to_string(a.hang_rank) + " hung after its last op: the iteration completed"
                      : r.failure)
              << "\n";
    if (!a.run_dir.empty()) {
      write_sim_run_dir(a.run_dir, r, scenario);
      write_run_layout(a.run_dir, schedule.layout);
    }
  }
  Coverage cov;
  if (scenario.options().calibration != nullptr) {
    std::vector<int64_t> server_of_rank; // communications' spans, as the simulator looks them up
    for (int64_t gpu : scenario.gpu_of_rank()) server_of_rank.push_back(scenario.fabric().server_of_gpu(gpu));
    cov = schedules::calibration_coverage(*scenario.options().calibration, schedule, r.trace, server_of_rank);
  }
  // headers name the cluster by its own name (a file's `name`), and the file it came from when that differs
  const std::string& own = scenario.fabric().spec().name;
  const std::string shown = own.empty() || own == cluster_name ? cluster_name : own + " (" + cluster_name + ")";
  std::cout << (a.json ? report_json(r, schedule, cluster_name, own.empty() ? cluster_name : own, a, cov)
                       : report_table(r, schedule, shown, a, cov));
  // a job that hung or failed under faults is a result ("completed": false, its records
  // written), not an input error, but it is no completed iteration either
  return r.completed ? 0 : kExitIncomplete;
}

} // namespace

void add_simulate_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate one training iteration of a job on a model of its cluster");
  args->job.add_to(*cmd);
  cmd->add_option("--cluster", args->cluster, "cluster preset or file (default: the job's)");
  cmd->add_option("--mode", args->mode, "flow (SimGrid, contention) or analytic (closed forms)")
      ->check(CLI::IsMember(config::sim_mode_names()));
  cmd->add_option("--placement", args->placement, "rank placement")->check(CLI::IsMember(config::placement_names()));
  add_seed_option(*cmd, "--seed", args->seed, "seed of ECMP hashing and random placement");
  cmd->add_option("--algorithm", args->algorithm, "all-reduce algorithm")
      ->check(CLI::IsMember(config::all_reduce_algorithm_names()));
  cmd->add_option("--channels", args->channels,
                  "NCCL channels asked for (rings; a group spanning several NICs per server uses a multiple of them)")
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--no-aggregate", args->no_aggregate, "execute every rank and every ring step (small jobs)");
  cmd->add_flag("--one-thread", args->one_thread,
                "use no helper thread beside this one (lowering, set-up, closed forms ahead): the same figures, "
                "for many simulations side by side");
  cmd->add_flag(
      "--ideal-collectives", args->ideal_collectives,
      "collectives without NCCL's protocol costs (Simple bandwidth, fabric latencies only): what-ifs, error budgets");
  cmd->add_flag("--every-rank", args->every_rank,
                "execute every rank at its GPU's speed, keeping the closed forms and merged ring steps");
  CLI::Option* speed_dist =
      cmd->add_option("--gpu-speed-dist", args->gpu_speed_dist,
                      "per-GPU compute speed factors drawn from normal:SIGMA, uniform:LO:HI or lognormal:SIGMA");
  cmd->add_option("--gpu-speed-file", args->gpu_speed_file,
                  "per-GPU speed factors, CSV scope,index,factor (scope rank, gpu or server; factors multiply)");
  add_seed_option(*cmd, "--speed-seed", args->speed_seed, "seed of --gpu-speed-dist")->needs(speed_dist);
  cmd->add_flag("--speed-variation", args->speed_variation,
                "per-GPU speed drawn per seed (catalogue speed_sigma); compute at the slowest GPU's pace");
  cmd->add_option("--slow-host-fraction", args->slow_host_fraction,
                  "with --speed-variation: probability in [0, 1] that a server is slow (drawn per seed)");
  cmd->add_option("--slow-host-factor", args->slow_host_factor,
                  "with --speed-variation: time multiplier (>= 1) of a slow server's GPUs");
  cmd->add_option("--trace", args->trace_file,
                  "write a trace of the executed ranks: FILE.tstrace the compact binary trace (streamed, every rank), "
                  "otherwise Chrome JSON (Perfetto)");
  cmd->add_option("--ranks", args->ranks, "ranks to trace, e.g. 0-7,64");
  cmd->add_option("--per-rank-csv", args->per_rank_csv, "write rank,tp,pp,dp,forward_s,backward_s,comm_wait_s");
  cmd->add_option("--link-csv", args->link_csv,
                  "flow mode: write per link direction bytes, busy time and utilisation (for report and diagnose)");
  cmd->add_option("--faults", args->faults_file, "fault plan (TOML) to inject");
  cmd->add_option("--calibration", args->calibration_file, "calibration table (JSON) overriding the device model");
  add_integer_option(*cmd, "--hang-rank", args->hang_rank, 0, int64_t{1} << 29, "0..world-1",
                     "rank that stops issuing ops (analytic mode, --every-rank): ground truth for diagnose");
  cmd->add_option("--hang-at-s", args->hang_at_s, "simulated time at which --hang-rank stops (default 0)")
      ->check(CLI::Range(0.0, 1e12));
  cmd->add_option("--run-dir", args->run_dir,
                  "with --hang-rank: write per-rank state files rank-<r>.json there (read by twinscale diagnose)");
  cmd->add_flag("--json", args->json, "JSON output");
  add_quiet_flag(*cmd);
  cmd->callback([args, &action]() {
    args->job.check_usage();
    action = [args]() { return run_simulate(*args); };
  });
}

} // namespace twinscale::cli
