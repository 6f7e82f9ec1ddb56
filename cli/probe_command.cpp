// `twinscale probe`: micro-benchmarks of this machine for one job (under mpirun or srun,
// like `run`): the kernels and collectives of the job's schedule, point-to-point and
// collective size sweeps (an nccl-tests-style table on stdout), a calibration table and a
// cluster description of the measured machine (backend/probe.hpp).
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "backend/error.hpp"
#include "backend/probe.hpp"
#include "cli/checked_options.hpp"
#include "cli/commands.hpp"
#include "cli/job_args.hpp"
#include "config/scenario.hpp"
#include "schedules/calibration.hpp"
#include "schedules/output_file.hpp"
#include "schedules/schedule.hpp"

namespace twinscale::cli {

namespace {

struct ProbeArgs {
  JobArgs job;
  std::string out, cluster_out;
  backend::ProbeOptions options;
  bool json = false;
};

/// What the probe measured, as JSON (rank 0's view): the sweeps' rows with their labels,
/// the point-to-point figures, and the files written.
nlohmann::json probe_json(const ProbeArgs& a, const backend::ProbeResult& r) {
  nlohmann::json j;
  j["world"] = r.world;
  j["out"] = a.out;
  if (!a.cluster_out.empty()) j["cluster_out"] = a.cluster_out;
  j["kernel_entries"] = r.table.kernels.size();
  j["comm_entries"] = r.table.comms.size();
  j["p2p_latency_s"] = r.p2p_latency_s;
  j["p2p_bandwidth_bytes_per_s"] = r.p2p_bandwidth_bytes_per_s;
  if (a.options.device == "cpu") j["hand_off_s"] = r.hand_off_s;
  j["sweep"] = nlohmann::json::array();
  for (const backend::SweepRow& s : r.sweep)
    j["sweep"].push_back({{"kind", std::string(schedules::to_string(s.kind))},
                          {"group", s.group_size},
                          {"size_bytes", s.bytes},
                          {"count", s.count},
                          {"type", s.type},
                          {"time_us", s.seconds * 1e6},
                          {"algbw_gb_per_s", s.algbw_bytes_per_s / 1e9},
                          {"busbw_gb_per_s", s.busbw_bytes_per_s / 1e9},
                          {"wrong", s.wrong}});
  return j;
}

int probe_command(const ProbeArgs& a) {
  if (a.options.device != "cpu" && a.options.device != "cuda")
    throw backend::BackendError("--device \"" + a.options.device + "\": valid values are cpu and cuda");
  schedules::check_distinct_files({{"JOB", a.job.file()}}, {{"--out", a.out}, {"--cluster-out", a.cluster_out}});
  a.job.refuse_cluster_edits("the probe measures the machine it runs on");
  const schedules::Schedule schedule = config::lower_for_real_run(a.job.load()); // as `run`
  const backend::ProbeResult r = backend::probe(schedule, a.options);
  if (r.rank == 0) {
    std::ostringstream text;
    schedules::write_calibration(r.table, text);
    write_file_atomically(a.out, text.str());
    if (!a.cluster_out.empty()) write_file_atomically(a.cluster_out, r.cluster_toml);
    if (a.json) {
      std::printf("%s\n", probe_json(a, r).dump(2).c_str());
      backend::finalize_probe();
      return 0;
    }
    std::fputs(backend::sweep_table(r.sweep).c_str(), stdout);
    if (a.options.device == "cpu") { // the CPU device's executor and MPI progress (backend/probe_overlap.hpp)
      std::fputs(backend::overlap_report(r.overlap).c_str(), stdout);
      std::printf("# hand-off (executor → worker, between consecutive compute ops, median): %.1f us "
                  "(the cluster file's op_issue_gap_s)\n",
                  r.hand_off_s * 1e6);
    }
    std::fprintf(stderr,
                 "twinscale probe: %lld ranks, %zu kernel entries, %zu communication entries written to %s%s%s; "
                 "point-to-point %.3g s latency, %.4g GB/s\n",
                 static_cast<long long>(r.world), r.table.kernels.size(), r.table.comms.size(), a.out.c_str(),
                 a.cluster_out.empty() ? "" : ", cluster to ", a.cluster_out.c_str(), r.p2p_latency_s,
                 r.p2p_bandwidth_bytes_per_s / 1e9);
  }
  backend::finalize_probe();
  return 0;
}

} // namespace

void add_probe_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<ProbeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "probe", "measure this machine for a job (under mpirun): its kernels and collectives, size sweeps; "
               "writes a calibration table and a cluster description");
  args->job.add_to(*cmd);
  cmd->add_option("--out", args->out, "calibration table to write (JSON)")->required();
  cmd->add_option("--cluster-out", args->cluster_out, "cluster description of the measured machine (TOML)");
  cmd->add_option("--device", args->options.device, "cpu or cuda (the devices of `run`)")->capture_default_str();
  cmd->add_option("--shape-divisor", args->options.shape_divisor, "as `run --shape-divisor`")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", args->options.warmup, "untimed runs before each measurement")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--repetitions", args->options.repetitions, "timed runs per measurement (median kept)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--max-sweep-bytes", args->options.max_sweep_bytes,
                  "largest message of the sweeps (default: 4 × the schedule's largest, at least 64 KiB)")
      ->check(CLI::Range(8.0, 1e10));
  cmd->add_flag("!--no-other-splits", args->options.other_splits,
                "measure only the job's own transfers and the sweeps, not also the exact transfers of its "
                "other pipeline/data-parallel splits");
  cmd->add_flag("--json", args->json,
                "JSON on stdout (the sweeps' rows, point-to-point figures) instead of the tables");
  add_quiet_flag(*cmd);
  cmd->callback([&action, args] {
    args->job.check_usage();
    action = [args] { return probe_command(*args); };
  });
}

} // namespace twinscale::cli
