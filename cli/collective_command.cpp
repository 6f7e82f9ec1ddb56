// `twinscale collective`: one collective on a group of GPUs of a cluster, over a sweep of
// sizes, printed as nccl-tests prints it (`size count type redop | time algbw busbw`), so
// a simulated table and a measured one can be diffed line by line. The collective runs
// through the same executor, plans and protocol choice as a training iteration
// (sim/collective_run.hpp).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "sim/collective_run.hpp"
#include "topology/fabric.hpp"

namespace twinscale::cli {

namespace {

struct CollectiveArgs {
  std::string cluster;
  std::string op = "all-reduce";
  int64_t gpus = 8;
  int64_t gpus_per_server = 0; // 0: as many as the cluster's servers hold
  std::string min_bytes = "8";
  std::string max_bytes = "128M";
  double factor = 2;
  std::string mode = "flow";
  std::string algorithm = "ring";
  std::string protocol = "auto";
  int channels = 2;
  uint64_t seed = 1;
  bool json = false;
};

/// "8", "64K", "128M", "8G" (powers of 1024, as nccl-tests reads -b/-e) → bytes.
double parse_size(const std::string& flag, const std::string& text) {
  double mult = 1;
  std::string digits = text;
  if (!digits.empty()) {
    switch (digits.back()) {
    case 'K':
    case 'k': mult = 1024.0; break;
    case 'M':
    case 'm': mult = 1024.0 * 1024; break;
    case 'G':
    case 'g': mult = 1024.0 * 1024 * 1024; break;
    default: break;
    }
    if (mult > 1) digits.pop_back();
  }
  size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(digits, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (digits.empty() || used != digits.size() || v <= 0)
    throw config::ConfigError(
        flag + ": '" + text +
        "' is not a size (valid: a positive integer with an optional K, M or G suffix, e.g. 8, 64K, 128M, 8G)");
  return static_cast<double>(v) * mult;
}

schedules::OpKind op_kind(const std::string& op) {
  if (op == "all-reduce") return schedules::OpKind::AllReduce;
  if (op == "all-gather") return schedules::OpKind::AllGather;
  if (op == "reduce-scatter") return schedules::OpKind::ReduceScatter;
  if (op == "all-to-all") return schedules::OpKind::AllToAll;
  return schedules::OpKind::Broadcast;
}

bool reduces(schedules::OpKind k) { return k == schedules::OpKind::AllReduce || k == schedules::OpKind::ReduceScatter; }

int run_collective_command(const CollectiveArgs& a) {
  const double lo = parse_size("--min-bytes", a.min_bytes);
  const double hi = parse_size("--max-bytes", a.max_bytes);
  if (hi < lo)
    throw config::ConfigError("--max-bytes " + a.max_bytes + " is below --min-bytes " + a.min_bytes +
                              " (valid: max ≥ min)");
  if (!(a.factor > 1))
    throw config::ConfigError("--factor " + std::to_string(a.factor) + " (valid: > 1, the ratio of successive sizes)");
  topology::ClusterSpec spec = config::load_cluster(a.cluster);
  const int64_t server_gpus = spec.server.gpus;
  const int64_t per_server = a.gpus_per_server > 0 ? a.gpus_per_server : std::min(a.gpus, server_gpus);
  std::vector<int64_t> gpus;
  try {
    gpus = sim::collective_gpus(a.gpus, per_server, server_gpus);
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError(std::string("--gpus/--gpus-per-server on cluster '") + a.cluster + "': " + e.what());
  }
  const int64_t servers = a.gpus / per_server;
  spec.gpus = servers * server_gpus; // the fabric is built for the servers the group spans
  topology::Fabric fabric(spec);

  sim::SimOptions o;
  o.mode = a.mode == "analytic" ? sim::SimMode::Analytic : sim::SimMode::Flow;
  o.seed = a.seed;
  o.channels = a.channels;
  o.all_reduce_algorithm = a.algorithm == "tree" ? sim::CollectiveAlgorithm::Tree : sim::CollectiveAlgorithm::Ring;
  if (a.protocol != "auto") {
    o.nccl.enabled = {a.protocol == "LL", a.protocol == "LL128", a.protocol == "Simple"};
  }
  const schedules::OpKind kind = op_kind(a.op);

  std::vector<double> sizes;
  for (double s = lo; s <= hi * (1 + 1e-12); s = std::floor(s * a.factor)) {
    sizes.push_back(s);
    if (sizes.size() > 64)
      throw config::ConfigError(
          "--min-bytes/--max-bytes/--factor give more than 64 sizes (valid: a sweep of at most 64; raise --factor)");
  }
  std::cerr << "twinscale collective: " << a.op << " over " << a.gpus << " GPUs (" << per_server << " per server, "
            << servers << " servers) on " << spec.name << ", " << a.mode << " mode, " << sizes.size() << " sizes\n";
  std::vector<sim::CollectiveRunResult> rows;
  Progress progress("collective sizes", static_cast<int64_t>(sizes.size()), "sizes");
  for (double s : sizes) {
    rows.push_back(sim::run_collective(fabric, kind, gpus, s, o));
    progress.update(static_cast<int64_t>(rows.size()));
  }
  progress.finish();

  const char* type = "float";
  const char* redop = reduces(kind) ? "sum" : "none";
  if (a.json) {
    nlohmann::json j;
    j["op"] = a.op;
    j["cluster"] = spec.name;
    j["gpus"] = a.gpus;
    j["gpus_per_server"] = per_server;
    j["servers"] = servers;
    j["mode"] = a.mode;
    j["algorithm"] = a.algorithm;
    j["seed"] = a.seed;
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows)
      out.push_back({{"size_bytes", r.bytes},
                     {"count", static_cast<int64_t>(r.bytes / 4)},
                     {"type", type},
                     {"redop", redop},
                     {"time_us", r.time_s * 1e6},
                     {"algbw_gb_per_s", r.algbw_bytes_per_s / 1e9},
                     {"busbw_gb_per_s", r.busbw_bytes_per_s / 1e9},
                     {"protocol", std::string(sim::to_string(r.protocol))},
                     {"algorithm", std::string(sim::to_string(r.algorithm))},
                     {"channels", r.channels},
                     {"flows", r.flows}});
    j["rows"] = out;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::ostringstream o2;
  o2 << "# twinscale collective: " << a.op << ", " << a.gpus << " GPUs (" << per_server << " per server, " << servers
     << " servers) on " << spec.name << ", " << a.mode << " mode, " << a.algorithm << ", channels asked " << a.channels
     << ", protocol " << a.protocol << ", seed " << a.seed << "\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "#%14s %12s %8s %6s %12s %9s %9s %7s %8s\n", "size", "count", "type", "redop", "time",
                "algbw", "busbw", "proto", "channels");
  o2 << buf;
  std::snprintf(buf, sizeof buf, "#%14s %12s %8s %6s %12s %9s %9s %7s %8s\n", "(B)", "(elements)", "", "", "(us)",
                "(GB/s)", "(GB/s)", "", "");
  o2 << buf;
  for (const auto& r : rows) {
    std::snprintf(buf, sizeof buf, "%15.0f %12lld %8s %6s %12.2f %9.2f %9.2f %7s %8lld\n", r.bytes,
                  static_cast<long long>(r.bytes / 4), type, redop, r.time_s * 1e6, r.algbw_bytes_per_s / 1e9,
                  r.busbw_bytes_per_s / 1e9, std::string(sim::to_string(r.protocol)).c_str(),
                  static_cast<long long>(r.channels));
    o2 << buf;
  }
  std::cout << o2.str();
  return 0;
}

} // namespace

void add_collective_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<CollectiveArgs>();
  CLI::App* cmd = app.add_subcommand("collective", "Simulate one collective over a size sweep (nccl-tests table)");
  cmd->add_option("--cluster", args->cluster, "cluster preset or file")->required();
  cmd->add_option("--op", args->op, "the collective")
      ->check(CLI::IsMember({"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast"}));
  cmd->add_option("--gpus", args->gpus, "GPUs in the group (default 8)");
  cmd->add_option("--gpus-per-server", args->gpus_per_server,
                  "group GPUs on each server (default: as many as a server holds)");
  cmd->add_option("--min-bytes,-b", args->min_bytes, "smallest size, e.g. 8, 64K (default 8)");
  cmd->add_option("--max-bytes,-e", args->max_bytes, "largest size, e.g. 128M, 8G (default 128M)");
  cmd->add_option("--factor,-f", args->factor, "ratio of successive sizes (default 2)");
  cmd->add_option("--mode", args->mode, "flow (SimGrid) or analytic (closed forms)")
      ->check(CLI::IsMember({"flow", "analytic"}));
  cmd->add_option("--algorithm", args->algorithm, "all-reduce algorithm")->check(CLI::IsMember({"ring", "tree"}));
  cmd->add_option("--protocol", args->protocol, "NCCL protocol: auto (the tuner's choice) or one of LL, LL128, Simple")
      ->check(CLI::IsMember({"auto", "LL", "LL128", "Simple"}));
  cmd->add_option("--channels", args->channels, "NCCL channels asked for")->check(CLI::Range(1, 64));
  cmd->add_option("--seed", args->seed, "ECMP hash seed");
  cmd->add_flag("--json", args->json, "JSON output");
  add_quiet_flag(*cmd);
  cmd->callback([args, &action]() { action = [args]() { return run_collective_command(*args); }; });
}

} // namespace twinscale::cli
