// `twinscale diagnose RUN`: stragglers, slow hosts, slow links, hangs and late launchers
// of a run. RUN is a Chrome or binary (.tstrace) trace, a per-rank CSV (simulate --per-rank-csv), the
// directory `twinscale run --run-dir` left (its trace.json and rank-<r>.json states), or PyTorch
// profiler (Kineto) traces, one file per rank (formats/kineto.hpp), as files or their directory.
// Exit status: 0 nothing found, 4 findings, 1 unreadable input.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/checked_options.hpp"
#include "cli/commands.hpp"
#include "cli/diagnose_input.hpp"
#include "cli/job_args.hpp"
#include "cli/layout_notation.hpp"
#include "diagnose/diagnosis.hpp"
#include "diagnose/error.hpp"
#include "diagnose/hang_report.hpp"
#include "diagnose/html_report.hpp"
#include "formats/kineto.hpp"
#include "schedules/binary_trace.hpp"
#include "schedules/input_file.hpp"
#include "schedules/json_document.hpp"
#include "schedules/output_file.hpp"
#include "schedules/trace.hpp"

namespace twinscale::cli {

namespace fs = std::filesystem;

namespace {

/// A CSV input (per-rank times, link loads): a regular file of bounded size, so /dev/zero
/// or a FIFO is refused instead of read forever.
std::string slurp(const std::string& path) {
  try {
    return schedules::read_input_file(path, "CSV file", schedules::InputKind::Csv);
  } catch (const schedules::InputFileError& e) {
    throw diagnose::DiagnoseError(e.what());
  }
}

/// World size of a run directory: the highest rank-<r>.json or rank-<r>.started + 1.
int64_t world_of_run_dir(const std::string& dir) {
  static const std::regex name(R"(rank-([0-9]{1,7})\.(json|started))");
  int64_t world = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string f = e.path().filename().string();
    if (std::regex_match(f, m, name)) world = std::max<int64_t>(world, std::stoll(m[1].str()) + 1);
  }
  return world;
}

/// Time by state and ETTR of `twinscale campaign --json` (or the campaign.json of --out).
void read_campaign(const std::string& path, diagnose::ReportOptions& o) {
  try {
    const nlohmann::json j = schedules::parse_json_document(slurp(path), path); // no repeated key
    const nlohmann::json& r = j.at("result");
    for (const auto& [state, v] : r.at("time_by_state_s").items())
      o.campaign_time_by_state_s.emplace_back(state, v.at("mean").get<double>());
    o.campaign_ettr = r.at("ettr").at("mean").get<double>();
    o.campaign_source = path;
  } catch (const nlohmann::json::exception& e) {
    throw diagnose::DiagnoseError(path + ": not the output of twinscale campaign --json (" + e.what() + ")");
  } catch (const schedules::JsonDocumentError& e) { // not JSON, a repeated key, too deep
    throw diagnose::DiagnoseError(std::string(e.what()) + "; not the output of twinscale campaign --json");
  }
}

/// A run traced by PyTorch's profiler, one Kineto file per rank.
diagnose::RunData read_kineto_run(const std::vector<std::string>& files, const std::string& source,
                                  const DiagnoseInputOptions& o) {
  formats::KinetoTrace k = formats::read_kineto_traces(files);
  diagnose::RunData data = diagnose::from_trace(k.records, source, o.gpus_per_host);
  for (std::string& n : k.notes) data.notes.push_back(std::move(n));
  if (o.layout) data.layout = o.layout;
  if (!o.links.empty()) data.links = diagnose::read_link_csv(slurp(o.links), o.links);
  return data;
}

} // namespace

diagnose::RunData read_runs(const std::vector<std::string>& paths, const DiagnoseInputOptions& o) {
  const auto kineto_file = [](const std::string& p) { return fs::is_regular_file(p) && formats::is_kineto_trace(p); };
  if (paths.size() > 1 && std::all_of(paths.begin(), paths.end(), kineto_file))
    return read_kineto_run(paths, paths.front() + " (and " + std::to_string(paths.size() - 1) + " more ranks)", o);
  diagnose::RunData data = read_run(paths.front(), o);
  for (size_t i = 1; i < paths.size(); ++i) diagnose::append_steps(data, read_run(paths[i], o));
  return data;
}

diagnose::RunData read_run(const std::string& path, const DiagnoseInputOptions& o) {
  if (fs::is_directory(path)) {
    const int64_t world = o.world > 0 ? o.world : world_of_run_dir(path);
    const std::string trace = (fs::path(path) / "trace.json").string();
    const std::string binary = (fs::path(path) / "trace.tstrace").string();
    if (!fs::exists(binary) && !fs::exists(trace) && world == 0)
      if (const auto files = formats::kineto_files_in(path); !files.empty()) return read_kineto_run(files, path, o);
    diagnose::RunData data;
    if (fs::exists(binary)) {
      data = diagnose::from_binary_trace(schedules::BinaryTraceReader(binary), o.gpus_per_host, o.layout);
      data.source = path;
    } else if (fs::exists(trace)) {
      std::vector<std::string> hosts;
      auto records = schedules::read_chrome_trace_file(trace, &hosts);
      data = diagnose::from_trace(records, path, o.gpus_per_host, hosts);
    } else {
      data.source = path;
      data.notes.push_back(
          "no trace.json in the run directory: only hangs are analysed (run with --trace DIR/trace.json)");
    }
    if (o.world > 0 && !data.ranks.empty() && o.world != static_cast<int64_t>(data.ranks.size()))
      throw diagnose::DiagnoseError("--world " + std::to_string(o.world) + ": the run's trace in " + path + " holds " +
                                    std::to_string(data.ranks.size()) +
                                    " ranks; --world must match the run (it names the world of a run directory "
                                    "without a trace)");
    if (world == 0 && data.ranks.empty())
      throw diagnose::DiagnoseError(path + ": a run directory needs trace.json or rank-<r>.json state files "
                                           "(twinscale run --run-dir DIR --trace DIR/trace.json)");
    if (world > 0) diagnose::add_hang_evidence(path, std::max<int64_t>(world, data.ranks.size()), data);
    if (o.layout)
      data.layout = o.layout;
    else if (auto written = read_run_layout(path)) // what `run --run-dir` / `simulate --run-dir` wrote
      data.layout = written;
    if (!o.links.empty()) data.links = diagnose::read_link_csv(slurp(o.links), o.links);
    return data;
  }
  if (!fs::is_regular_file(path))
    throw diagnose::DiagnoseError(path + ": no such file or directory (a trace, a per-rank CSV or a run directory)");
  std::ifstream head(path, std::ios::binary);
  std::string first(8, '\0');
  head.read(first.data(), 8); // a binary trace's magic number, or the start of a CSV header
  first.resize(static_cast<size_t>(head.gcount()));
  std::string line;
  if (head && first != "TWSTRACE" && !schedules::is_binary_trace_path(path)) std::getline(head, line);
  first += line;
  diagnose::RunData data;
  if (schedules::is_binary_trace_path(path) || first.rfind("TWSTRACE", 0) == 0)
    data = diagnose::from_binary_trace(schedules::BinaryTraceReader(path), o.gpus_per_host, o.layout);
  else if (first.rfind("rank,", 0) == 0)
    data = diagnose::read_per_rank_csv(slurp(path), path, o.gpus_per_host);
  else if (formats::is_kineto_trace(path))
    return read_kineto_run({path}, path, o);
  else {
    std::vector<std::string> hosts;
    auto records = schedules::read_chrome_trace_file(path, &hosts);
    data = diagnose::from_trace(records, path, o.gpus_per_host, hosts);
  }
  if (o.layout) data.layout = o.layout;
  if (!o.links.empty()) data.links = diagnose::read_link_csv(slurp(o.links), o.links);
  return data;
}

void add_diagnose_input_options(CLI::App& cmd, DiagnoseInputOptions& o) {
  add_integer_option(cmd, "--gpus-per-host", o.gpus_per_host, 1, 1 << 20, "1..2^20",
                     "ranks per host when the run does not name hosts (default 8)");
  add_integer_option(cmd, "--world", o.world, 1, 1 << 20, "1..2^20",
                     "ranks of a run directory (default: from its rank-<r> files)");
  cmd.add_option_function<std::string>(
      "--layout", [&o](const std::string& text) { o.layout = parse_layout_option("--layout", text).layout(); },
      "the layout of a trace, TPxDPxPP in Megatron's order (8x192x8) or named parts (tp8xcp2xdp96xpp8): slow links "
      "need each collective's group; a run directory's layout.json gives it");
  cmd.add_option("--links", o.links,
                 "link loads of a flow-mode run (simulate --link-csv): slow links, and the report's fabric heat-map");
}

void add_diagnose_command(CLI::App& app, Action& action) {
  struct Args {
    std::vector<std::string> runs;
    DiagnoseInputOptions input;
    diagnose::DiagnoseOptions options;
    bool json = false;
    int64_t max_rows = 40;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("diagnose", "stragglers, slow hosts and links, hangs, late launchers of a run "
                                                 "(exit 0: nothing found, 4: findings)");
  cmd->add_option(
         "run", args->runs,
         "a trace, a per-rank CSV, a run directory or PyTorch profiler traces (one file per rank, or their directory); "
         "several: successive steps of one job, or the ranks of one run for Kineto traces")
      ->required();
  add_diagnose_input_options(*cmd, args->input);
  cmd->add_option("--min-excess", args->options.min_excess, "straggler: fraction above its peers' median")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--min-z", args->options.min_z, "straggler: robust z (MADs) above its peers' median")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  add_integer_option(*cmd, "--baseline-steps", args->options.baseline_steps, 0, 1 << 30, "0..steps-1",
                     "the first K steps are a healthy reference: stragglers are ranks that became slower "
                     "than they were, relative to their peers (cancels a persistent chip-to-chip spread)");
  cmd->add_flag("--json", args->json, "JSON instead of the table");
  add_integer_option(*cmd, "--rows", args->max_rows, 1, 1 << 30, "1..2^30", "findings shown in the table (default 40)");
  cmd->callback([args, &action] {
    action = [args] {
      diagnose::RunData data = read_runs(args->runs, args->input);
      const diagnose::Diagnosis d = diagnose::diagnose_run(data, args->options);
      std::cout << (args->json ? diagnose::to_json(d) : diagnose::format_table(d, static_cast<size_t>(args->max_rows)));
      return d.findings.empty() ? 0 : 4;
    };
  });
}

void add_report_command(CLI::App& app, Action& action) {
  struct Args {
    std::vector<std::string> runs;
    DiagnoseInputOptions input;
    std::string out;
    std::string title = "twinscale report";
    std::vector<int64_t> timeline_ranks;
    std::string campaign;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("report", "one self-contained HTML page of a run, charts drawn by the embedded "
                                               "Vega (opens offline): a summary, time by phase, rank × phase heat-map, "
                                               "TP × DP × PP grid, timeline, link utilisation, campaign, diagnosis");
  cmd->add_option(
         "run", args->runs,
         "a trace, a per-rank CSV, a run directory or PyTorch profiler traces (one file per rank, or their directory); "
         "several: successive steps of one job, or the ranks of one run for Kineto traces")
      ->required();
  add_diagnose_input_options(*cmd, args->input);
  cmd->add_option("-o,--out", args->out, "the HTML file to write")->required();
  cmd->add_option("--title", args->title, "page title")->capture_default_str();
  cmd->add_option("--timeline-ranks", args->timeline_ranks,
                  "ranks drawn on the timeline (default: rank 0 and the ranks the diagnosis names)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option("--campaign", args->campaign, "a campaign's result (twinscale campaign --json) for time by state");
  cmd->callback([args, &action] {
    action = [args] {
      diagnose::require_chart_library(); // before reading a run that may be large
      std::vector<schedules::NamedPath> inputs{{"--campaign", args->campaign}, {"--links", args->input.links}};
      for (const auto& r : args->runs) inputs.push_back({"RUN", r});
      schedules::check_distinct_files(inputs, {{"--out", args->out}});
      diagnose::RunData data = read_runs(args->runs, args->input);
      const diagnose::Diagnosis d = diagnose::diagnose_run(data);
      diagnose::ReportOptions o;
      o.title = args->title;
      o.timeline_ranks = args->timeline_ranks;
      if (!args->campaign.empty()) read_campaign(args->campaign, o);
      write_file_atomically(args->out, diagnose::html_report(data, d, o));
      std::cerr << "report of " << data.source << " written to " << args->out << " (" << d.findings.size()
                << " finding(s))\n";
      return 0;
    };
  });
}

} // namespace twinscale::cli
