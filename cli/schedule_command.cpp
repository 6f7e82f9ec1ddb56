// `twinscale schedule show|export|validate`: lower a job and look at the schedule, write
// it as versioned JSON, or validate a schedule file.
//
//   twinscale schedule show (JOB | --preset NAME) [--gpus N] [--global-batch B] [--json]
//   twinscale schedule export (JOB | --preset NAME) [...] --out FILE
//   twinscale schedule export (JOB | --preset NAME) [...] --format chakra --out PREFIX
//   twinscale schedule import-chakra PREFIX --out FILE [JOB | --preset NAME] [--gpu-memory-gb G]
//                                   [--calibration-out CAL]  (the nodes' measured durations)
//   twinscale schedule validate FILE [--gpu-memory-gb G] [--json]
//   twinscale schedule memory (JOB | --preset NAME) [--gpus N] [--global-batch B] [--json]
//     per-rank memory (worst stage) of every tp/pp/ZeRO/recompute choice at that GPU count
// The memory check uses the GPU memory of the job's cluster unless --gpu-memory-gb.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/job_args.hpp"
#include "cli/layout_notation.hpp"
#include "config/error.hpp"
#include "config/job_file.hpp"
#include "config/toml_reader.hpp"
#include "formats/chakra.hpp"
#include "schedules/error.hpp"
#include "schedules/input_file.hpp"
#include "schedules/memory_choices.hpp"
#include "schedules/output_file.hpp"
#include "schedules/schedule.hpp"
#include "schedules/schedule_json.hpp"
#include "schedules/validate.hpp"

namespace twinscale::cli {

namespace {
namespace s = twinscale::schedules;

constexpr int kOpKinds = static_cast<int>(s::OpKind::Recv) + 1;
constexpr int kGroupKinds = static_cast<int>(s::GroupKind::World) + 1;

std::string num(double v, const char* fmt = "%.3g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

struct StageSummary {
  std::array<int64_t, kOpKinds> ops_by_kind{};
  std::array<double, kGroupKinds> bytes_by_group{}; // per iteration, per rank
  int64_t ops = 0;
};

std::vector<StageSummary> summarize(const s::Schedule& sch) {
  std::vector<StageSummary> out;
  const double iterations = static_cast<double>(sch.job.options.iterations);
  for (int64_t p = 0; p < sch.layout.pp; ++p) {
    const s::Program& prog = sch.program(sch.layout.rank({0, 0, p}));
    StageSummary st;
    st.ops = static_cast<int64_t>(prog.ops.size());
    for (const s::Op& op : prog.ops) {
      ++st.ops_by_kind[static_cast<int>(op.kind)];
      if (op.is_communication()) st.bytes_by_group[static_cast<int>(op.group)] += op.bytes / iterations;
    }
    out.push_back(st);
  }
  return out;
}

int show(const s::Schedule& sch, bool as_json) {
  const auto stages = summarize(sch);
  const auto& job = sch.job;
  const double narayanan = s::narayanan_model_flops(job.model, job.parallel.global_batch);
  if (as_json) {
    nlohmann::json j;
    j["job"] = nlohmann::json::parse(s::job_to_json(job));
    j["ranks"] = sch.world();
    j["programs"] = sch.programs.size();
    j["micro_batches"] = job.parallel.micro_batches();
    j["model_flops_per_iteration"] = sch.model_flops_per_iteration;
    j["narayanan_model_flops"] = narayanan;
    nlohmann::json st = nlohmann::json::array();
    for (size_t p = 0; p < stages.size(); ++p) {
      nlohmann::json e;
      e["pp_rank"] = p;
      e["ops"] = stages[p].ops;
      for (int k = 0; k < kOpKinds; ++k)
        if (stages[p].ops_by_kind[k])
          e["ops_by_kind"][std::string(s::to_string(static_cast<s::OpKind>(k)))] = stages[p].ops_by_kind[k];
      for (int g = 0; g < kGroupKinds; ++g)
        if (stages[p].bytes_by_group[g] > 0)
          e["bytes_per_iteration_by_group"][std::string(s::to_string(static_cast<s::GroupKind>(g)))] =
              stages[p].bytes_by_group[g];
      const auto& m = sch.memory_by_stage[p];
      e["memory_bytes"] = {{"parameters", m.parameters_bytes},
                           {"gradients", m.gradients_bytes},
                           {"optimizer", m.optimizer_bytes},
                           {"activations", m.activations_bytes},
                           {"total", m.total_bytes()}};
      st.push_back(e);
    }
    j["stages"] = st;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  const auto& p = job.parallel;
  std::cout << "job            " << job.name << " (cluster " << job.cluster << ")\n"
            << "ranks          " << sch.world() << " = " << layout_text(p) << "; " << sch.programs.size()
            << " distinct programs\n"
            << "pipeline       "
            << (job.options.pipeline == s::PipelineKind::Interleaved    ? "interleaved 1F1B"
                : job.options.pipeline == s::PipelineKind::ZeroBubbleH1 ? "ZB-H1"
                                                                        : "1F1B")
            << ", vpp " << p.vpp << ", " << p.micro_batches() << " micro-batches of " << p.micro_batch
            << " per pipeline, " << job.options.iterations << " iteration(s)\n"
            << "model FLOPs    " << num(sch.model_flops_per_iteration)
            << " per iteration (Narayanan closed form, dense attention: " << num(narayanan) << ")\n\n";
  std::cout << "ops per rank, by pipeline stage (kinds that occur)\n";
  std::array<bool, kOpKinds> used{};
  for (const auto& st : stages)
    for (int k = 0; k < kOpKinds; ++k) used[k] = used[k] || st.ops_by_kind[k] > 0;
  std::printf("%5s %9s", "stage", "total");
  for (int k = 0; k < kOpKinds; ++k)
    if (used[k]) std::printf(" %14s", std::string(s::to_string(static_cast<s::OpKind>(k))).c_str());
  std::printf("\n");
  for (size_t i = 0; i < stages.size(); ++i) {
    std::printf("%5zu %9lld", i, static_cast<long long>(stages[i].ops));
    for (int k = 0; k < kOpKinds; ++k)
      if (used[k]) std::printf(" %14lld", static_cast<long long>(stages[i].ops_by_kind[k]));
    std::printf("\n");
  }
  std::printf("\ncommunication bytes per rank per iteration, by group kind (GB)\n%5s", "stage");
  // the expert-parallel columns only for jobs with experts
  auto shown = [&](int g) {
    const auto kind = static_cast<s::GroupKind>(g);
    if (kind == s::GroupKind::Cp) return sch.job.parallel.cp > 1; // context parallel only when used
    if (kind == s::GroupKind::EpNode || kind == s::GroupKind::EpRail) return sch.layout.hierarchical_ep();
    return sch.job.model.experts > 0 || (kind != s::GroupKind::Ep && kind != s::GroupKind::ExpertDp);
  };
  for (int g = 0; g < kGroupKinds; ++g)
    if (shown(g)) std::printf(" %10s", std::string(s::to_string(static_cast<s::GroupKind>(g))).c_str());
  std::printf("\n");
  for (size_t i = 0; i < stages.size(); ++i) {
    std::printf("%5zu", i);
    for (int g = 0; g < kGroupKinds; ++g)
      if (shown(g)) std::printf(" %10.4g", stages[i].bytes_by_group[g] / 1e9);
    std::printf("\n");
  }
  std::printf("\nmemory per rank (GB)\n%5s %10s %10s %10s %11s %10s\n", "stage", "params", "grads", "optimizer",
              "activations", "total");
  for (size_t i = 0; i < sch.memory_by_stage.size(); ++i) {
    const auto& m = sch.memory_by_stage[i];
    std::printf("%5zu %10.2f %10.2f %10.2f %11.2f %10.2f\n", i, m.parameters_bytes / 1e9, m.gradients_bytes / 1e9,
                m.optimizer_bytes / 1e9, m.activations_bytes / 1e9, m.total_bytes() / 1e9);
  }
  std::fflush(stdout);
  return 0;
}

struct ScheduleArgs {
  JobArgs job;
  bool json = false;
  std::string out;
  std::string file;
  std::string format = "json";           // export: json | chakra
  std::string import_job, import_preset; // import-chakra: the job of a foreign ET set
  std::string calibration_out;           // import-chakra: the nodes' durations as a calibration table
  std::optional<double> gpu_memory_gb;   // validate FILE only (show/export: in JobArgs)
};

int show_memory_choices(const ScheduleArgs& a) {
  const s::JobSpec job = a.job.load();
  const double gpu = a.job.target_for(job).gpu_memory_bytes;
  const auto choices = s::memory_by_parallel_choice(job, gpu);
  if (a.json) {
    nlohmann::json j;
    j["job"] = job.name;
    j["gpus"] = job.parallel.gpus();
    j["gpu_memory_bytes"] = gpu;
    j["choices"] = nlohmann::json::array();
    for (const auto& c : choices)
      j["choices"].push_back({{"tp", c.parallel.tp},
                              {"cp", c.parallel.cp},
                              {"pp", c.parallel.pp},
                              {"vpp", c.parallel.vpp},
                              {"dp", c.parallel.dp},
                              {"ep", c.parallel.ep},
                              {"zero_stage", c.parallel.zero_stage},
                              {"recompute", c.recompute},
                              {"worst_stage", c.worst_stage},
                              {"parameters_bytes", c.worst.parameters_bytes},
                              {"gradients_bytes", c.worst.gradients_bytes},
                              {"optimizer_bytes", c.worst.optimizer_bytes},
                              {"activations_bytes", c.worst.activations_bytes},
                              {"total_bytes", c.worst.total_bytes()},
                              {"fits", c.fits}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("job %s on %lld GPUs: per-rank memory (GB) of the worst stage, GPU %.1f GB\n", job.name.c_str(),
              static_cast<long long>(job.parallel.gpus()), gpu / 1e9);
  // Megatron's order: tp, cp, ep, dp, pp (then the virtual stages)
  std::printf("%4s %4s %4s %6s %4s %4s %5s %9s %6s %9s %9s %9s %11s %9s %5s\n", "tp", "cp", "ep", "dp", "pp", "vpp",
              "zero", "recompute", "stage", "params", "grads", "optimizer", "activations", "total", "fits");
  for (const auto& c : choices)
    std::printf("%4lld %4lld %4lld %6lld %4lld %4lld %5lld %9s %6lld %9.2f %9.2f %9.2f %11.2f %9.2f %5s\n",
                static_cast<long long>(c.parallel.tp), static_cast<long long>(c.parallel.cp),
                static_cast<long long>(c.parallel.ep), static_cast<long long>(c.parallel.dp),
                static_cast<long long>(c.parallel.pp), static_cast<long long>(c.parallel.vpp),
                static_cast<long long>(c.parallel.zero_stage), c.recompute ? "yes" : "no",
                static_cast<long long>(c.worst_stage), c.worst.parameters_bytes / 1e9, c.worst.gradients_bytes / 1e9,
                c.worst.optimizer_bytes / 1e9, c.worst.activations_bytes / 1e9, c.worst.total_bytes() / 1e9,
                c.fits ? "yes" : "no");
  return 0;
}

s::Schedule lower_job(const ScheduleArgs& a) {
  const s::JobSpec job = a.job.load();
  return s::lower(job, a.job.target_for(job));
}

/// The set PREFIX.<rank>.et, one file at a time, after checking that it fits the free
/// disk space; a set that cannot be finished is removed (no half-written set is left).
int export_chakra_files(const s::Schedule& sch, const std::string& prefix) {
  const formats::ChakraExporter exporter(sch);
  const double estimate = exporter.estimated_set_bytes();
  std::filesystem::path dir = std::filesystem::path(prefix).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  const auto space = std::filesystem::space(dir, ec);
  if (ec) throw Error(prefix + ": cannot write the Chakra set: " + dir.string() + ": " + ec.message());
  if (estimate > static_cast<double>(space.available))
    throw Error(prefix + ": the Chakra set would take " + num(estimate / 1e9, "%.2f") + " GB (" +
                std::to_string(sch.world()) + " files) but " + dir.string() + " has " +
                num(static_cast<double>(space.available) / 1e9, "%.2f") +
                " GB free; write it elsewhere or export fewer ranks (--gpus)");
  int64_t written = 0;
  try {
    for (; written < sch.world(); ++written)
      write_file_atomically(formats::chakra_file_name(prefix, written), exporter.file(written));
  } catch (...) {
    for (int64_t r = 0; r < written; ++r) std::filesystem::remove(formats::chakra_file_name(prefix, r), ec);
    throw;
  }
  std::cerr << "twinscale: wrote " << formats::chakra_file_name(prefix, 0) << " … "
            << formats::chakra_file_name(prefix, sch.world() - 1) << " (Chakra ET, " << sch.world() << " ranks, "
            << num(estimate / 1e6, "%.1f") << " MB)\n";
  return 0;
}

/// import-chakra: the set's schedule, validated (with the memory of the job's cluster),
/// written as a schedule JSON file.
int import_chakra_files(const ScheduleArgs& a) {
  const auto paths = formats::chakra_set_paths(a.file);
  std::vector<s::NamedPath> inputs{{"--job", a.import_job}};
  for (const auto& p : paths) inputs.push_back({"PREFIX", p});
  s::check_distinct_files(inputs, {{"--out", a.out}});
  auto read = [&paths](size_t r) {
    try {
      return s::read_input_file(paths[r], "Chakra ET file", s::InputKind::Json);
    } catch (const s::InputFileError& e) {
      throw formats::ChakraError(e.what());
    }
  };
  std::optional<s::Schedule> base;
  if (!a.import_job.empty() && !a.import_preset.empty())
    throw config::ConfigError("import-chakra: give --job FILE or --preset NAME, not both");
  if (!a.import_job.empty() || !a.import_preset.empty()) {
    const s::JobSpec job =
        a.import_job.empty() ? config::load_job_preset(a.import_preset) : config::load_job(a.import_job);
    s::LoweringTarget target;
    target.check_memory = false; // only the layout, names and memory estimate are taken from it
    base = s::lower(job, target);
  }
  formats::ChakraImportReport report;
  const s::Schedule sch = formats::import_chakra(paths, read, base, &report);
  if (report.metadata_nodes + report.memory_nodes + report.host_nodes > 0)
    std::cerr << "twinscale: skipped " << report.metadata_nodes << " METADATA node(s), " << report.memory_nodes
              << " MEM_LOAD/MEM_STORE node(s) (" << num(report.memory_bytes / 1e6, "%.1f")
              << " MB: twinscale's memory is the job's estimate, not per-op transfers) and " << report.host_nodes
              << " host (is_cpu_op) node(s); dependencies pass through skipped nodes\n";
  for (const auto& [pg, group] : report.process_groups)
    std::cerr << "twinscale: process group \"" << pg << "\" is the " << group << " group\n";
  // the header names a cluster like any document: a preset or a file next to the ET set
  config::resolve_document_reference(a.file, sch.job.cluster, "job.cluster (GlobalMetadata header)", "clusters");
  s::ValidateOptions opt;
  opt.check_memory = false; // the ET says nothing of memory; the job's estimate is kept as it is
  const auto violations = s::validate(sch, opt);
  if (!violations.empty()) {
    std::string text;
    for (size_t i = 0; i < violations.size() && i < 10; ++i) text += "\n  " + s::describe(violations[i]);
    throw formats::ChakraError(
        a.file + ": the ET set does not make a schedule that can run (" + std::to_string(violations.size()) +
        " violation(s); op = position of the node in the rank's file, skipped nodes not counted):" + text);
  }
  std::ostringstream os;
  s::write_schedule_json(sch, os);
  write_file_atomically(a.out, os.str());
  std::cerr << "twinscale: wrote " << a.out << " (" << sch.world() << " ranks, " << sch.programs.size()
            << " programs, valid)\n";
  if (!a.calibration_out.empty()) {
    if (report.durations.empty())
      throw formats::ChakraError(a.file + ": --calibration-out: no node of the set has a duration_micros");
    std::ostringstream cal;
    s::write_calibration(formats::calibration_of_durations(sch, report, "chakra " + a.file), cal);
    write_file_atomically(a.calibration_out, cal.str());
    std::cerr << "twinscale: wrote " << a.calibration_out << " (the durations of " << report.durations.size()
              << " op(s): simulate --calibration " << a.calibration_out << ")\n";
  } else if (!report.durations.empty()) {
    std::cerr << "twinscale: " << report.durations.size()
              << " op(s) carry a measured duration_micros; --calibration-out FILE keeps them as a calibration "
                 "table\n";
  }
  return 0;
}
} // namespace

void add_schedule_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<ScheduleArgs>();
  CLI::App* cmd = app.add_subcommand("schedule", "lower a job into a schedule, export or validate it");
  cmd->require_subcommand(1);

  CLI::App* show_cmd = cmd->add_subcommand("show", "lower a job and summarise its schedule");
  args->job.add_to(*show_cmd);
  show_cmd->add_flag("--json", args->json, "machine-readable output");
  show_cmd->callback([args, &action] {
    args->job.check_usage();
    action = [args] { return show(lower_job(*args), args->json); };
  });

  CLI::App* export_cmd = cmd->add_subcommand("export", "lower a job and write the schedule JSON");
  args->job.add_to(*export_cmd);
  export_cmd->add_option("--out", args->out, "output file (json) or prefix of the files (chakra: PREFIX.<rank>.et)")
      ->required();
  export_cmd->add_option("--format", args->format, "json (twinscale's schedule file) or chakra (MLCommons Chakra ET)")
      ->capture_default_str();
  export_cmd->callback([args, &action] {
    args->job.check_usage();
    action = [args] {
      if (args->format != "json" && args->format != "chakra")
        throw config::ConfigError("--format \"" + args->format + "\": valid values are json and chakra");
      const s::Schedule sch = lower_job(*args);
      if (args->format == "chakra") return export_chakra_files(sch, args->out);
      std::ostringstream os;
      s::write_schedule_json(sch, os);
      write_file_atomically(args->out, os.str());
      std::cerr << "twinscale: wrote " << args->out << " (" << sch.world() << " ranks, " << sch.programs.size()
                << " programs)\n";
      return 0;
    };
  });

  CLI::App* import_cmd =
      cmd->add_subcommand("import-chakra", "read a Chakra ET set (PREFIX.<rank>.et) into a validated schedule file");
  import_cmd->add_option("prefix", args->file, "the set's prefix")->required();
  import_cmd->add_option("--out", args->out, "schedule JSON file to write (atomically)")->required();
  import_cmd->add_option("--job", args->import_job,
                         "job file (TOML) the ranks follow, for an ET set not written by twinscale");
  import_cmd->add_option("--preset", args->import_preset, "job preset, instead of --job");
  import_cmd->add_option("--calibration-out", args->calibration_out,
                         "write the nodes' measured durations (duration_micros) as a calibration table here");
  import_cmd->callback([args, &action] { action = [args] { return import_chakra_files(*args); }; });
  CLI::App* memory_cmd = cmd->add_subcommand("memory", "per-rank memory of every parallel choice of a job");
  args->job.add_to(*memory_cmd);
  memory_cmd->add_flag("--json", args->json, "machine-readable output");
  memory_cmd->callback([args, &action] {
    args->job.check_usage();
    action = [args] { return show_memory_choices(*args); };
  });

  CLI::App* validate_cmd = cmd->add_subcommand("validate", "check that a schedule file can run");
  validate_cmd->add_option("file", args->file, "schedule JSON file")->required();
  validate_cmd->add_flag("--json", args->json, "machine-readable output");
  validate_cmd->add_option("--gpu-memory-gb", args->gpu_memory_gb,
                           "GPU memory per rank (default: the cluster named in the schedule's job)");
  validate_cmd->callback([args, &action] {
    action = [args] {
      const s::Schedule sch = s::read_schedule_file(args->file);
      s::ValidateOptions opt;
      // the schedule names its cluster: a preset or a file next to the schedule, nothing else
      opt.gpu_memory_bytes =
          gpu_memory_bytes(args->gpu_memory_gb ? sch.job.cluster
                                               : config::resolve_document_reference(args->file, sch.job.cluster,
                                                                                    "job.cluster", "clusters"),
                           args->gpu_memory_gb);
      const auto violations = s::validate(sch, opt);
      if (args->json) {
        nlohmann::json j;
        j["file"] = args->file;
        j["valid"] = violations.empty();
        j["ranks"] = sch.world();
        j["symmetric"] = s::is_pp_symmetric(sch);
        j["violations"] = nlohmann::json::array();
        for (const auto& v : violations)
          j["violations"].push_back({{"kind", s::to_string(v.kind)},
                                     {"rank", v.rank},
                                     {"op", v.op_index},
                                     {"name", v.op_name},
                                     {"labels", v.labels},
                                     {"reason", v.reason}});
        std::cout << j.dump(2) << "\n";
      } else if (violations.empty()) {
        std::cout << args->file << ": valid (" << sch.world() << " ranks, " << sch.programs.size() << " programs"
                  << (s::is_pp_symmetric(sch) ? ", checked by tp×dp symmetry" : "") << ")\n";
      } else {
        for (const auto& v : violations) std::cout << s::describe(v) << "\n";
      }
      if (!violations.empty())
        std::cerr << "twinscale: " << args->file << ": " << violations.size() << " violation(s)\n";
      return violations.empty() ? 0 : 1;
    };
  });
}

} // namespace twinscale::cli
