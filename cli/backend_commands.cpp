// `twinscale run`: one rank of a real run (under mpirun or srun), CPU or CUDA device.
// `twinscale compare`: two traces of one schedule, op by op.
// `twinscale calibrate`: a real trace → the calibration table the simulator reads.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "backend/error.hpp"
#include "backend/rendezvous.hpp"
#include "backend/runner.hpp"
#include "cli/checked_options.hpp"
#include "cli/commands.hpp"
#include "cli/job_args.hpp"
#include "cli/layout_notation.hpp"
#include "config/scenario.hpp"
#include "diagnose/hang_report.hpp"
#include "diagnose/trace_compare.hpp"
#include "formats/kineto.hpp"
#include "schedules/binary_trace.hpp"
#include "schedules/calibration.hpp"
#include "schedules/error.hpp"
#include "schedules/input_file.hpp"
#include "schedules/output_file.hpp"
#include "schedules/schedule_json.hpp"
#include "schedules/synthetic.hpp"
#include "schedules/trace.hpp"
#include "schedules/validate.hpp"

namespace twinscale::cli {

namespace {

struct RunArgs {
  JobArgs job;           // JOB | --preset NAME (with --gpus, --global-batch)
  std::string synthetic; // or "TPxDPxPP"
  std::string schedule;  // or a schedule JSON file (schedule export, schedule import-chakra)
  std::string trace;
  schedules::SyntheticOptions synthetic_options;
  std::string device = "cpu";
  double timeout_s = 60;
  std::string rendezvous = "mpi";
  std::string group_init = "local";
  std::string run_dir;
  int64_t shape_divisor = 1;
  int64_t delay_rank = -1;
  double delay_s = 0;
  bool no_verify = false;
  bool json = false;
  backend::CheckpointOptions checkpoint;
};

// Bounds of the self-test schedule, shared by run and calibrate (which must accept what run does).
constexpr int64_t kMaxSyntheticMicroBatches = 100000;
constexpr const char* kSyntheticMicroBatchesWhy = "10^5: each one is a forward and a backward per rank";
constexpr int64_t kMaxSyntheticHidden = 65536;
constexpr const char* kSyntheticHiddenWhy = "2^16: GEMMs are hidden × hidden";

schedules::Layout parse_layout(const std::string& text) {
  return parse_layout_option("--synthetic", text, false).layout();
}

schedules::Schedule load_schedule(const JobArgs& job_args, const std::string& synthetic, schedules::SyntheticOptions so,
                                  const std::string& schedule_file = "") {
  if (!schedule_file.empty()) { // e.g. a Chakra ET set imported by `schedule import-chakra`
    schedules::Schedule sch = schedules::read_schedule_file(schedule_file);
    schedules::ValidateOptions vo;
    vo.check_memory = false; // as for a lowered job: the CPU device runs scaled shapes
    const auto violations = schedules::validate(sch, vo);
    if (!violations.empty())
      throw schedules::ScheduleError(schedule_file + ": cannot run: " + schedules::describe(violations.front()) +
                                     " (twinscale schedule validate lists all " + std::to_string(violations.size()) +
                                     ")");
    return sch;
  }
  if (!synthetic.empty()) {
    so.tokens = so.hidden;
    return schedules::synthetic_schedule(parse_layout(synthetic), so);
  }
  job_args.refuse_cluster_edits("the real run takes its machine as it is");
  return config::lower_for_real_run(job_args.load()); // synthetic tensors, at scaled shapes on CPUs
}

/// The CPU device holds each op's buffer in host memory, at most `max_buffer_bytes` each:
/// a schedule with a larger one (a GEMM operand, a message) is refused before any rank
/// starts, naming the op and the option that scales it down.
void refuse_oversized_buffers(const schedules::Schedule& schedule, const backend::CpuDeviceOptions& cpu,
                              const std::string& source) {
  for (int64_t r = 0; r < schedule.world(); ++r) {
    if (r > 0 && schedule.program_of_rank[r] == schedule.program_of_rank[r - 1]) continue;
    const schedules::Program& prog = schedule.program(r);
    for (size_t i = 0; i < prog.ops.size(); ++i) {
      const double bytes = schedules::largest_buffer_bytes(prog.ops[i], cpu.shape_divisor, 4);
      if (bytes > cpu.max_buffer_bytes)
        throw backend::BackendError(source + ": rank " + std::to_string(r) + " op " + std::to_string(i) + " (" +
                                    schedule.names[prog.ops[i].name] + ") needs a buffer of " +
                                    std::to_string(bytes / 1e6) + " MB on the CPU device, above its limit of " +
                                    std::to_string(cpu.max_buffer_bytes / 1e6) +
                                    " MB; pass a larger --shape-divisor to scale the schedule down");
    }
  }
}

int run_command(const RunArgs& a) {
  schedules::check_distinct_files({{"JOB", a.job.file()}, {"--schedule", a.schedule}}, {{"--trace", a.trace}});
  backend::RunOptions o;
  if (a.device == "cpu")
    o.device = backend::DeviceKind::Cpu;
  else if (a.device == "cuda")
    o.device = backend::DeviceKind::Cuda;
  else
    throw backend::BackendError("--device \"" + a.device + "\": valid values are cpu and cuda");
  o.executor.timeout_s = a.timeout_s;
  o.settle_s = std::min(1.0, a.timeout_s);
  o.rendezvous = backend::parse_rendezvous(a.rendezvous);
  if (a.group_init == "local")
    o.group_init = backend::GroupInit::Local;
  else if (a.group_init == "global")
    o.group_init = backend::GroupInit::GlobalSplit;
  else
    throw backend::BackendError("--group-init \"" + a.group_init + "\": valid values are local and global");
  o.run_dir = a.run_dir;
  o.report_hang = diagnose::report_run_dir;
  o.cpu.shape_divisor = a.shape_divisor;
  o.cpu.verify = !a.no_verify;
  o.cpu.delay_rank = a.delay_rank;
  o.cpu.compute_delay_s = a.delay_s;
  o.cpu.start_timeout_s = std::max(o.cpu.start_timeout_s, a.timeout_s); // warm-up, then all start
  if ((a.delay_rank >= 0) != (a.delay_s > 0))
    throw backend::BackendError("--delay-rank and --delay-s go together (a rank and a delay > 0 s per compute op)");
  if (a.delay_rank >= 0 && a.device != "cpu")
    throw backend::BackendError("--delay-rank: only the cpu device injects delays, not --device " + a.device);
  o.checkpoint = a.checkpoint;
  if ((a.checkpoint.step >= 0 || a.checkpoint.restore) && a.checkpoint.dir.empty())
    throw backend::BackendError("--checkpoint-step and --restore need --checkpoint-dir DIR");

  const schedules::Schedule schedule = load_schedule(a.job, a.synthetic, a.synthetic_options, a.schedule);
  if (o.device == backend::DeviceKind::Cpu)
    refuse_oversized_buffers(schedule, o.cpu, a.schedule.empty() ? "the schedule" : a.schedule);
  if (a.checkpoint.step >= 0 || a.checkpoint.restore) {
    // each rank holds its shard twice (device state and the stage-1 snapshot); on one
    // machine all of them together must fit the memory available, or it ends in bad_alloc
    const double need = 2 * a.checkpoint.state_bytes * static_cast<double>(schedule.world());
    const schedules::MemoryRoom avail = schedules::memory_room();
    if (need > avail.bytes)
      throw backend::BackendError("--checkpoint-bytes " + std::to_string(a.checkpoint.state_bytes / 1e9) +
                                  " GB: " + std::to_string(schedule.world()) +
                                  " ranks each holding the shard twice need " + std::to_string(need / 1e9) +
                                  " GB, more than the " + std::to_string(avail.bytes / 1e9) +
                                  " GB of memory available (" + avail.source + "); use fewer bytes");
  }
  if (a.delay_rank >= schedule.world())
    throw backend::BackendError("--delay-rank " + std::to_string(a.delay_rank) + ": the schedule has ranks 0.." +
                                std::to_string(schedule.world() - 1));

  // the layout beside the ranks' state files, so that `diagnose DIR` needs no --layout
  if (!a.run_dir.empty() && backend::detect_launch_env().rank == 0) write_run_layout(a.run_dir, schedule.layout);
  const backend::RunOutcome out = backend::run_schedule(schedule, o);
  if (out.rank == 0) {
    std::fprintf(stderr, "twinscale run: rank 0 of %lld (%s): %s, %u/%u ops in %.3f s\n",
                 static_cast<long long>(out.world), out.launcher.c_str(),
                 std::string(backend::to_string(out.result.status)).c_str(), out.result.ops_completed,
                 out.result.ops_total, out.result.elapsed_s);
    for (const backend::InitPhase& p : out.init_phases)
      std::fprintf(stderr, "twinscale run: init %-18s %.6f s\n", p.name.c_str(), p.seconds);
  }
  if (out.checkpoint.restored_step && out.rank == 0)
    std::fprintf(stderr, "twinscale run: restored checkpoint step %lld (read %.6f s, DP broadcast %.6f s)\n",
                 static_cast<long long>(*out.checkpoint.restored_step), out.checkpoint.restore_read_s,
                 out.checkpoint.restore_broadcast_s);
  if (out.checkpoint.committed && out.rank == 0)
    std::fprintf(stderr,
                 "twinscale run: checkpoint step %lld committed (snapshot %.6f s, waited %.6f s for the persist)\n",
                 static_cast<long long>(a.checkpoint.step), out.checkpoint.snapshot_s, out.checkpoint.persist_s);
  if (!out.report_summary.empty()) std::fprintf(stderr, "%s", out.report_summary.c_str());
  if (a.json && out.rank == 0) { // results of rank 0's view on stdout
    nlohmann::json j;
    j["world"] = out.world;
    j["launcher"] = out.launcher;
    j["all_ranks_completed"] = out.all_ranks_completed;
    j["rank0"] = {{"status", std::string(backend::to_string(out.result.status))},
                  {"ops_completed", out.result.ops_completed},
                  {"ops_total", out.result.ops_total},
                  {"elapsed_s", out.result.elapsed_s}};
    j["init_phases_s"] = nlohmann::json::array();
    for (const auto& p : out.init_phases) j["init_phases_s"].push_back({p.name, p.seconds});
    if (a.checkpoint.step >= 0 || a.checkpoint.restore)
      j["checkpoint"] = {{"restored_step", out.checkpoint.restored_step ? *out.checkpoint.restored_step : -1},
                         {"committed", out.checkpoint.committed},
                         {"snapshot_s", out.checkpoint.snapshot_s},
                         {"persist_wait_s", out.checkpoint.persist_s},
                         {"restore_read_s", out.checkpoint.restore_read_s},
                         {"restore_broadcast_s", out.checkpoint.restore_broadcast_s}};
    std::cout << j.dump(1) << std::endl;
  }
  if (out.trace && !a.trace.empty()) {
    if (schedules::is_binary_trace_path(a.trace)) {
      schedules::write_binary_trace(*out.trace, schedule, a.trace);
    } else {
      std::ostringstream text;
      schedules::write_chrome_trace(*out.trace, schedule, text);
      write_file_atomically(a.trace, text.str());
    }
    std::fprintf(stderr, "twinscale run: trace of %zu ops written to %s\n", out.trace->events.size(), a.trace.c_str());
  }
  const bool ok = out.all_ranks_completed;
  backend::finalize_backend(out);
  return ok ? 0 : 4;
}

struct CompareArgs {
  std::string a, b;
  bool json = false;
};

/// A trace compare and calibrate read: twinscale's, or PyTorch profiler (Kineto) traces
/// (a file, or a directory of one file per rank); its notes go to stderr.
formats::AnyTrace read_trace_file(const std::string& path, const char* command) {
  formats::AnyTrace t = formats::read_any_trace({path});
  if (t.source.empty()) t.source = diagnose::trace_source(path);
  for (const std::string& n : t.notes) std::fprintf(stderr, "twinscale %s: %s: %s\n", command, path.c_str(), n.c_str());
  return t;
}

std::string pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2f%%", 100.0 * x);
  return buf;
}

std::set<int64_t> ranks_of(const std::vector<schedules::TraceRecord>& t) {
  std::set<int64_t> out;
  for (const auto& r : t) out.insert(r.rank);
  return out;
}

bool names_instances(const std::vector<schedules::TraceRecord>& t) {
  return std::any_of(t.begin(), t.end(), [](const schedules::TraceRecord& r) { return !r.instance.empty(); });
}

/// What makes a comparison meaningless or partial, said instead of leaving the errors to
/// speak: nothing in common (a refusal), ranks one trace lacks, collectives one trace does
/// not name as instances, a CPU run against a simulation of its cluster's GPUs.
std::vector<std::string> comparison_notes(const formats::AnyTrace& ta, const std::string& a,
                                          const formats::AnyTrace& tb, const std::string& b,
                                          const diagnose::TraceComparison& c) {
  const std::set<int64_t> ra = ranks_of(ta.records), rb = ranks_of(tb.records);
  if (c.matched == 0)
    throw schedules::ScheduleError("compare: no op of " + a + " (" + std::to_string(ra.size()) + " rank(s)) is in " +
                                   b + " (" + std::to_string(rb.size()) +
                                   " rank(s)) at the same rank and op index: the traces are not of one schedule, or "
                                   "share no rank; nothing to compare");
  std::vector<std::string> notes;
  const auto missing = [&](const std::set<int64_t>& x, const std::string& x_path, const std::set<int64_t>& y,
                           const std::string& y_path) {
    int64_t n = 0;
    for (int64_t r : x) n += y.count(r) ? 0 : 1;
    if (n > 0)
      notes.push_back(y_path + " lacks " + std::to_string(n) + " of the " + std::to_string(x.size()) + " ranks of " +
                      x_path +
                      ": only shared ranks are compared (a simulation traces only the ranks it executed; `simulate "
                      "--no-aggregate` executes and traces every rank)");
  };
  missing(ra, a, rb, b);
  missing(rb, b, ra, a);
  const bool ia = names_instances(ta.records), ib = names_instances(tb.records);
  if (ia != ib)
    notes.push_back((ia ? b : a) + " names no collective instances: collectives are compared by each op's own "
                                   "duration, waits for late peers included, so their errors mix the schedule's waits "
                                   "with the transfers");
  const double span = c.a_span_s > 0 ? (c.b_span_s - c.a_span_s) / c.a_span_s : 0;
  const bool cpu_vs_sim = (ta.source == "cpu" && tb.source == "sim") || (ta.source == "sim" && tb.source == "cpu");
  if (cpu_vs_sim && std::abs(span) > 0.5)
    notes.push_back("the spans differ by " + pct(span) +
                    ": a CPU run (shapes scaled down, fp32, ranks sharing cores) is comparable with a simulation "
                    "only when that simulation used this machine's measurements (`calibrate` of the run, or `probe "
                    "--out cal.json --cluster-out host.toml`, then `simulate --calibration cal.json [--cluster "
                    "host.toml]`); a simulation of the job's own cluster predicts GPUs, not this run");
  return notes;
}

/// The host of `rank` as a trace names it; "" when it does not.
std::string host_in(const formats::AnyTrace& t, int64_t rank) {
  return rank < static_cast<int64_t>(t.hosts.size()) ? t.hosts[static_cast<size_t>(rank)] : std::string();
}

/// The host column of a rank: its host in A, B's when A names none, both when they differ.
std::string host_cell(const formats::AnyTrace& ta, const formats::AnyTrace& tb, int64_t rank) {
  const std::string a = host_in(ta, rank), b = host_in(tb, rank);
  if (a.empty() && b.empty()) return "-";
  if (a.empty() || b.empty() || a == b) return a.empty() ? b : a;
  return a + " / " + b;
}

int compare_command(const CompareArgs& args) {
  formats::AnyTrace ta = read_trace_file(args.a, "compare");
  formats::AnyTrace tb = read_trace_file(args.b, "compare");
  // A Kineto trace against a twinscale trace: its kernels mapped onto the other's ops.
  if (ta.kineto && !tb.kineto) ta.records = formats::align_kineto(ta.records, args.a, tb.records, args.b);
  if (tb.kineto && !ta.kineto) tb.records = formats::align_kineto(tb.records, args.b, ta.records, args.a);
  const diagnose::TraceComparison c = diagnose::compare_traces(ta.records, args.a, tb.records, args.b);
  const std::vector<std::string> notes = comparison_notes(ta, args.a, tb, args.b, c);
  for (const std::string& n : notes) std::fprintf(stderr, "twinscale compare: note: %s\n", n.c_str());
  const std::string& sa = ta.source;
  const std::string& sb = tb.source;
  if (args.json) {
    nlohmann::json j;
    j["notes"] = notes;
    j["a"] = {{"path", args.a}, {"source", sa}, {"span_s", c.a_span_s}};
    j["b"] = {{"path", args.b}, {"source", sb}, {"span_s", c.b_span_s}};
    j["matched"] = c.matched;
    j["only_a"] = c.only_a;
    j["only_b"] = c.only_b;
    j["kinds"] = nlohmann::json::array();
    for (const auto& k : c.kinds)
      j["kinds"].push_back({{"kind", k.kind},
                            {"ops", k.ops},
                            {"a_mean_s", k.a_mean_s},
                            {"b_mean_s", k.b_mean_s},
                            {"mean_rel_error", k.mean_rel_error},
                            {"median_abs_rel_error", k.median_abs_rel_error},
                            {"max_abs_rel_error", k.max_abs_rel_error},
                            {"waits_excluded", k.waits_excluded},
                            {"op_median_abs_rel_error", k.op_median_abs_rel_error}});
    j["ranks"] = nlohmann::json::array();
    for (const auto& r : c.ranks) {
      j["ranks"].push_back({{"rank", r.rank},
                            {"ops", r.ops},
                            {"a_span_s", r.a_span_s},
                            {"b_span_s", r.b_span_s},
                            {"rel_error", r.rel_error}});
      // the rank's host in each trace, where the trace names it
      if (const std::string h = host_in(ta, r.rank); !h.empty()) j["ranks"].back()["a_host"] = h;
      if (const std::string h = host_in(tb, r.rank); !h.empty()) j["ranks"].back()["b_host"] = h;
    }
    std::cout << j.dump(1) << "\n";
    return 0;
  }
  std::printf("A: %s (%s)\nB: %s (%s)\n", args.a.c_str(), sa.c_str(), args.b.c_str(), sb.c_str());
  std::printf("ops matched %lld, only in A %lld, only in B %lld\n", static_cast<long long>(c.matched),
              static_cast<long long>(c.only_a), static_cast<long long>(c.only_b));
  std::printf("span: A %.6f s, B %.6f s, error %s\n\n", c.a_span_s, c.b_span_s,
              pct(c.a_span_s > 0 ? (c.b_span_s - c.a_span_s) / c.a_span_s : 0).c_str());
  std::printf("%-16s %8s %14s %14s %11s %13s %11s\n", "kind", "ops", "A mean s", "B mean s", "mean err", "median |err|",
              "max |err|");
  for (const auto& k : c.kinds)
    std::printf("%-16s %8lld %14.9f %14.9f %11s %13s %11s\n", k.kind.c_str(), static_cast<long long>(k.ops), k.a_mean_s,
                k.b_mean_s, pct(k.mean_rel_error).c_str(), pct(k.median_abs_rel_error).c_str(),
                pct(k.max_abs_rel_error).c_str());
  for (const auto& k : c.kinds)
    if (k.waits_excluded)
      std::printf("%s: timed as its instances, last end - last start (waits for late peers excluded); from "
                  "each op's own start: median |err| %s\n",
                  k.kind.c_str(), pct(k.op_median_abs_rel_error).c_str());
  std::printf("\n%-6s %-16s %8s %14s %14s %11s\n", "rank", "host", "ops", "A span s", "B span s", "err");
  for (const auto& r : c.ranks)
    std::printf("%-6lld %-16s %8lld %14.6f %14.6f %11s\n", static_cast<long long>(r.rank),
                host_cell(ta, tb, r.rank).c_str(), static_cast<long long>(r.ops), r.a_span_s, r.b_span_s,
                pct(r.rel_error).c_str());
  return 0;
}

struct CalibrateArgs {
  std::string trace, out, device_name, synthetic;
  JobArgs job;
  schedules::SyntheticOptions synthetic_options;
  int64_t shape_divisor = 1;
  bool json = false;
};

int calibrate_command(const CalibrateArgs& a) {
  schedules::check_distinct_files({{"TRACE", a.trace}, {"JOB", a.job.file()}}, {{"--out", a.out}});
  const schedules::Schedule schedule = load_schedule(a.job, a.synthetic, a.synthetic_options);
  formats::AnyTrace t = read_trace_file(a.trace, "calibrate");
  std::string source = t.source;
  std::string device = a.device_name.empty() ? (t.device.empty() ? source : t.device) : a.device_name;
  if (t.kineto) { // a GPU run profiled by PyTorch: its kernels mapped onto the schedule's ops
    t.records = formats::align_kineto(t.records, a.trace, formats::schedule_records(schedule), "the schedule");
    source = "cuda";
  }
  if (source != "cpu" && source != "cuda")
    throw backend::BackendError("calibrate: trace " + a.trace + " has source \"" + source +
                                "\"; calibration is measured on real runs (source cpu or cuda, or a PyTorch "
                                "profiler trace)");
  const schedules::CalibrationTable table =
      diagnose::calibrate_from_trace(t.records, a.trace, schedule, source, device, a.shape_divisor);
  std::ostringstream text;
  schedules::write_calibration(table, text);
  write_file_atomically(a.out, text.str());
  std::fprintf(stderr, "twinscale calibrate: %zu kernel entries, %zu communication entries written to %s\n",
               table.kernels.size(), table.comms.size(), a.out.c_str());
  if (a.json) { // what was written, and the table itself
    nlohmann::json j;
    j["out"] = a.out;
    j["trace"] = a.trace;
    j["source"] = source;
    j["kernel_entries"] = table.kernels.size();
    j["comm_entries"] = table.comms.size();
    j["table"] = nlohmann::json::parse(text.str());
    std::cout << j.dump(2) << "\n";
  }
  return 0;
}

} // namespace

void add_backend_commands(CLI::App& app, Action& action) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand("run", "run a schedule for real: one process per rank, under mpirun or srun");
  args->job.add_to(*run);
  run->add_option("--trace", args->trace, "write the Chrome trace of the run here (rank 0)");
  run->add_option("--synthetic", args->synthetic,
                  "the executor's self-test schedule for a layout TPxDPxPP (Megatron's order) or tp2xdp2xpp2");
  run->add_option("--schedule", args->schedule,
                  "a schedule file to run (JSON: schedule export, schedule import-chakra), instead of a job");
  add_integer_option(*run, "--synthetic-micro-batches", args->synthetic_options.micro_batches, 1,
                     kMaxSyntheticMicroBatches, kSyntheticMicroBatchesWhy, "micro-batches of the self-test schedule");
  add_integer_option(*run, "--synthetic-hidden", args->synthetic_options.hidden, 1, kMaxSyntheticHidden,
                     kSyntheticHiddenWhy, "hidden size (and tokens) of the self-test schedule");
  run->add_option("--device", args->device, "cpu (MPI + Eigen) or cuda (NCCL + cuBLAS)")->capture_default_str();
  run->add_option("--timeout", args->timeout_s,
                  "seconds without progress (an op completed) before a rank stops and reports a hang")
      ->capture_default_str();
  run->add_option("--rendezvous", args->rendezvous, "mpi or redis://HOST:PORT")->capture_default_str();
  run->add_option(
         "--group-init", args->group_init,
         "local (each group created by its own members) or global (a split over the world and a barrier per group)")
      ->capture_default_str();
  run->add_option("--run-dir", args->run_dir, "directory for per-rank state files and report.json");
  run->add_option("--shape-divisor", args->shape_divisor, "CPU device: divide every shape and message by this")
      ->capture_default_str();
  run->add_option("--checkpoint-dir", args->checkpoint.dir, "checkpoint directory (step-N/shard-*.bin, manifest.json)");
  add_integer_option(*run, "--checkpoint-step", args->checkpoint.step, 0, int64_t{1} << 53, "a training step number",
                     "write checkpoint step N: blocking snapshot, then persisted in the background during the run");
  run->add_flag("--restore", args->checkpoint.restore, "restore the latest complete checkpoint before the run");
  run->add_option("--checkpoint-bytes", args->checkpoint.state_bytes, "synthetic state per (tp, pp) shard, bytes")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e12));
  run->add_option("--checkpoint-persist-bw", args->checkpoint.persist_bw_bytes_per_s,
                  "storage bandwidth the persist paces itself to, bytes/s (0: unpaced)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  run->add_flag("--json", args->json, "rank 0 prints its outcome as JSON on stdout");
  add_integer_option(*run, "--delay-rank", args->delay_rank, 0, 1 << 20, "a rank of the job",
                     "CPU device, fault injection: this rank's compute ops take --delay-s longer (a straggler)");
  run->add_option("--delay-s", args->delay_s, "seconds added to each compute op of --delay-rank")
      ->check(CLI::Range(0.0, 60.0));
  run->add_flag("--no-verify", args->no_verify, "CPU device: do not check received data");
  auto cmp = std::make_shared<CompareArgs>();
  CLI::App* compare =
      app.add_subcommand("compare", "compare two traces of one schedule op by op (error per op kind and rank)");
  compare
      ->add_option(
          "a", cmp->a,
          "trace A (the reference, e.g. the real run; PyTorch profiler traces: a file or a directory of one per rank)")
      ->required();
  compare->add_option("b", cmp->b, "trace B (e.g. the simulation)")->required();
  compare->add_flag("--json", cmp->json, "JSON instead of the table");
  compare->callback([&action, cmp] { action = [cmp] { return compare_command(*cmp); }; });

  auto cal = std::make_shared<CalibrateArgs>();
  CLI::App* calibrate = app.add_subcommand("calibrate", "a real trace → the calibration table the simulator reads");
  calibrate
      ->add_option("trace", cal->trace,
                   "trace of a real run (twinscale run --trace), or PyTorch profiler traces of one")
      ->required();
  cal->job.add_to(*calibrate);
  calibrate->add_option("--synthetic", cal->synthetic,
                        "the trace is of the self-test schedule of this layout, TPxDPxPP or tp2xdp2xpp2");
  add_integer_option(*calibrate, "--synthetic-micro-batches", cal->synthetic_options.micro_batches, 1,
                     kMaxSyntheticMicroBatches, kSyntheticMicroBatchesWhy, "as given to run");
  add_integer_option(*calibrate, "--synthetic-hidden", cal->synthetic_options.hidden, 1, kMaxSyntheticHidden,
                     kSyntheticHiddenWhy, "as given to run");
  calibrate->add_option("--out", cal->out, "calibration table to write (JSON)")->required();
  calibrate->add_option("--shape-divisor", cal->shape_divisor, "the --shape-divisor of the CPU run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  calibrate->add_option("--device-name", cal->device_name, "device description stored in the table");
  calibrate->add_flag("--json", cal->json, "also print what was written, and the table, as JSON on stdout");
  calibrate->callback([&action, cal] {
    if (cal->synthetic.empty()) cal->job.check_usage();
    action = [cal] { return calibrate_command(*cal); };
  });

  run->callback([&action, args] {
    if (!args->schedule.empty()) {
      if (!args->synthetic.empty() || !args->job.source().empty())
        throw CLI::ValidationError("--schedule", "give one of a job (JOB or --preset), --synthetic or --schedule");
    } else if (args->synthetic.empty())
      args->job.check_usage();
    else if (!args->job.source().empty())
      throw CLI::ValidationError("--synthetic", "give either a job (JOB or --preset) or --synthetic, not both");
    action = [args] { return run_command(*args); };
  });
}

} // namespace twinscale::cli
