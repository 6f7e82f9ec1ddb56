// `twinscale collective`: one collective on a group of GPUs of a cluster, over a sweep of
// sizes, printed as nccl-tests prints it (`size count type redop | time algbw busbw`), so
// a simulated table and a measured one can be diffed line by line. The collective runs
// through the same executor, plans and protocol choice as a training iteration
// (sim/collective_run.hpp), with the simulator options `simulate` takes from the same
// cluster file (config::cluster_sim_options: its [network] congestion control included).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/job_args.hpp"
#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "config/scenario.hpp"
#include "sim/collective_run.hpp"
#include "sim/error.hpp"
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
  std::string json_file;          // -J: the JSON to a file as well
  std::string datatype = "float"; // -d: the element type (labels and counts)
  std::string redop = "sum";      // -o: the reduction (a label: the time does not depend on it)
  int root = 0;                   // -r: broadcast's root
  int iters = 20, warmup = 5;     // -n, -w: accepted as nccl-tests', one simulated time for all
  int check = 1;                  // -c: accepted; nothing is moved to check
  std::vector<std::string> set;   // --set KEY=VALUE of the cluster's TOML
};

/// Bytes of an nccl-tests datatype (-d).
double datatype_bytes(const std::string& type) {
  if (type == "int8" || type == "uint8" || type == "fp8_e4m3" || type == "fp8_e5m2") return 1;
  if (type == "half" || type == "bfloat16") return 2;
  if (type == "double" || type == "int64" || type == "uint64") return 8;
  return 4; // float, int32, uint32
}

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

/// What the table's label columns say: the element type and its size, the reduction and
/// the root, as nccl-tests prints them (-1: a collective without a root).
struct Labels {
  std::string type, redop;
  double element_bytes = 4;
  int root = -1;
};

Labels labels_of(const CollectiveArgs& a, schedules::OpKind kind) {
  Labels l;
  l.type = a.datatype;
  l.element_bytes = datatype_bytes(a.datatype);
  l.redop = reduces(kind) ? a.redop : "none";
  l.root = kind == schedules::OpKind::Broadcast ? a.root : -1;
  return l;
}

/// "8" when every row used 8 channels, else "2-8"; with the asked minimum when it differs.
std::string channels_text(const std::vector<sim::CollectiveRunResult>& rows, int asked) {
  int64_t lo = INT64_MAX, hi = 0;
  for (const auto& r : rows) {
    lo = std::min(lo, r.channels);
    hi = std::max(hi, r.channels);
  }
  if (rows.empty()) return std::to_string(asked) + " asked";
  std::string used = lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
  if (lo == asked && hi == asked) return used;
  return used + " (--channels " + std::to_string(asked) +
         " is the least asked; rings use a multiple of the NICs a server's GPUs use)";
}

/// The nccl-tests table: size count type redop root, then time algbw busbw #wrong for the
/// out-of-place and the in-place run (the simulator moves the same bytes either way, so
/// both show the one simulated time), then the protocol and channels the tuner chose;
/// the footer's average bus bandwidth is over every row and both runs, as nccl-tests'.
std::string nccl_table(const std::vector<sim::CollectiveRunResult>& rows, const Labels& l) {
  std::string out;
  char buf[320];
  // the group labels centred over their four columns (36 characters each, after 51)
  std::snprintf(buf, sizeof buf, "#%50s %12s%-12s%12s %10s%-14s%12s\n", "", "", "out-of-place", "", "", "in-place", "");
  out += buf;
  std::snprintf(buf, sizeof buf, "#%14s %12s %8s %6s %6s %10s %8s %8s %6s %10s %8s %8s %6s %7s %8s\n", "size", "count",
                "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong",
                "proto", "channels");
  out += buf;
  std::snprintf(buf, sizeof buf, "#%14s %12s %8s %6s %6s %10s %8s %8s %6s %10s %8s %8s %6s %7s %8s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "", "");
  out += buf;
  double sum_busbw = 0;
  for (const auto& r : rows) {
    std::snprintf(buf, sizeof buf, "%15.0f %12lld %8s %6s %6d", r.bytes,
                  static_cast<long long>(r.bytes / l.element_bytes), l.type.c_str(), l.redop.c_str(), l.root);
    out += buf;
    for (int place = 0; place < 2; ++place) {
      std::snprintf(buf, sizeof buf, " %10.2f %8.2f %8.2f %6s", r.time_s * 1e6, r.algbw_bytes_per_s / 1e9,
                    r.busbw_bytes_per_s / 1e9, "N/A");
      out += buf;
    }
    std::snprintf(buf, sizeof buf, " %7s %8lld\n", std::string(sim::to_string(r.protocol)).c_str(),
                  static_cast<long long>(r.channels));
    out += buf;
    sum_busbw += r.busbw_bytes_per_s / 1e9;
  }
  out += "# Out of bounds values : N/A (simulated)\n";
  std::snprintf(buf, sizeof buf, "# Avg bus bandwidth    : %g \n#\n",
                rows.empty() ? 0.0 : sum_busbw / static_cast<double>(rows.size()));
  out += buf;
  return out;
}

nlohmann::json collective_json(const CollectiveArgs& a, const std::string& cluster, const sim::SimOptions& o,
                               int64_t per_server, int64_t servers, const Labels& l,
                               const std::vector<sim::CollectiveRunResult>& rows) {
  nlohmann::json j;
  j["op"] = a.op;
  j["cluster"] = cluster;
  j["congestion_control"] = topology::congestion_control_name(o.network.congestion_control);
  j["gpus"] = a.gpus;
  j["gpus_per_server"] = per_server;
  j["servers"] = servers;
  j["mode"] = a.mode;
  j["algorithm"] = a.algorithm;
  j["seed"] = a.seed;
  j["channels_asked"] = a.channels;
  j["datatype"] = l.type;
  j["redop"] = l.redop;
  j["root"] = l.root;
  j["iters"] = a.iters;
  j["warmup_iters"] = a.warmup;
  nlohmann::json out = nlohmann::json::array();
  double sum_busbw = 0;
  for (const auto& r : rows) {
    out.push_back({{"size_bytes", r.bytes},
                   {"count", static_cast<int64_t>(r.bytes / l.element_bytes)},
                   {"type", l.type},
                   {"redop", l.redop},
                   {"root", l.root},
                   {"time_us", r.time_s * 1e6},
                   {"algbw_gb_per_s", r.algbw_bytes_per_s / 1e9},
                   {"busbw_gb_per_s", r.busbw_bytes_per_s / 1e9},
                   {"in_place_time_us", r.time_s * 1e6},
                   {"wrong", nullptr},
                   {"protocol", std::string(sim::to_string(r.protocol))},
                   {"algorithm", std::string(sim::to_string(r.algorithm))},
                   {"channels", r.channels},
                   {"flows", r.flows}});
    sum_busbw += r.busbw_bytes_per_s / 1e9;
  }
  j["rows"] = out;
  j["avg_busbw_gb_per_s"] = rows.empty() ? 0.0 : sum_busbw / static_cast<double>(rows.size());
  return j;
}

int run_collective_command(const CollectiveArgs& a) {
  const double lo = parse_size("--min-bytes", a.min_bytes);
  const double hi = parse_size("--max-bytes", a.max_bytes);
  if (hi < lo)
    throw config::ConfigError("--max-bytes " + a.max_bytes + " is below --min-bytes " + a.min_bytes +
                              " (valid: max ≥ min)");
  if (!(a.factor > 1))
    throw config::ConfigError("--factor " + std::to_string(a.factor) + " (valid: > 1, the ratio of successive sizes)");
  // the cluster file read once; the simulator options it implies ([network] congestion
  // control included) are the ones `simulate` runs with on that cluster
  const config::ClusterFile cluster = config::load_cluster_file(a.cluster, cluster_key_overrides(a.set));
  topology::ClusterSpec spec = cluster.cluster;
  const int64_t server_gpus = spec.server.gpus;
  const int64_t per_server = a.gpus_per_server > 0 ? a.gpus_per_server : std::min(a.gpus, server_gpus);
  std::vector<int64_t> gpus;
  try {
    gpus = sim::collective_gpus(a.gpus, per_server, server_gpus);
  } catch (const sim::SimError& e) {
    throw config::ConfigError(std::string("--gpus/--gpus-per-server on cluster '") + a.cluster + "': " + e.what());
  }
  const int64_t servers = a.gpus / per_server;
  spec.gpus = servers * server_gpus; // the fabric is built for the servers the group spans
  topology::Fabric fabric(spec);

  sim::SimOptions base;
  base.mode = config::parse_sim_mode(a.mode, "--mode");
  base.channels = a.channels;
  base.all_reduce_algorithm = config::parse_all_reduce_algorithm(a.algorithm, "--algorithm");
  if (a.protocol != "auto") {
    base.nccl.enabled = {a.protocol == "LL", a.protocol == "LL128", a.protocol == "Simple"};
  }
  const sim::SimOptions o = config::cluster_sim_options(cluster, base, a.seed);
  const schedules::OpKind kind = op_kind(a.op);

  // each step advances at least one byte: a factor close to 1 on small sizes would
  // otherwise round back to the same size and never reach --max-bytes
  std::vector<double> sizes;
  for (double s = lo; s <= hi * (1 + 1e-12); s = std::max(s + 1, std::floor(s * a.factor))) {
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

  const Labels labels = labels_of(a, kind);
  const nlohmann::json j = collective_json(a, spec.name, o, per_server, servers, labels, rows);
  if (!a.json_file.empty()) write_file_atomically(a.json_file, j.dump(2) + "\n");
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::ostringstream o2;
  o2 << "# twinscale collective: " << a.op << ", " << a.gpus << " GPUs (" << per_server << " per server, " << servers
     << " servers) on " << spec.name << ", " << a.mode << " mode, " << a.algorithm << ", protocol " << a.protocol
     << ", channels " << channels_text(rows, a.channels) << ", seed " << a.seed;
  if (o.network.congestion_control != topology::CongestionControl::None)
    o2 << ", congestion control " << topology::congestion_control_name(o.network.congestion_control);
  o2 << "\n";
  o2 << "# minBytes " << static_cast<long long>(lo) << " maxBytes " << static_cast<long long>(hi)
     << " step: " << a.factor << "(factor) warmup iters: " << a.warmup << " iters: " << a.iters
     << " validation: " << a.check
     << " (simulated: every iteration takes the same time, no data is moved, so #wrong is N/A)\n#\n";
  o2 << nccl_table(rows, labels);
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
  add_cluster_set_option(*cmd, args->set);
  cmd->add_flag("--json", args->json, "JSON output on stdout instead of the table");
  cmd->add_option("-J,--json-file", args->json_file, "write the JSON to FILE as well (the table stays on stdout)");
  cmd->add_option("-d,--datatype", args->datatype, "element type, as nccl-tests names it (counts and labels)")
      ->check(CLI::IsMember({"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double",
                             "bfloat16", "fp8_e4m3", "fp8_e5m2"}))
      ->capture_default_str();
  cmd->add_option("-o,--redop", args->redop, "reduction of all-reduce and reduce-scatter (a label: same time)")
      ->check(CLI::IsMember({"sum", "prod", "min", "max", "avg"}))
      ->capture_default_str();
  cmd->add_option("-r,--root", args->root, "broadcast's root rank")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  cmd->add_option("-n,--iters", args->iters, "timed iterations (nccl-tests'; the simulated time is the same for all)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("-w,--warmup-iters", args->warmup, "warm-up iterations (nccl-tests'; nothing to warm up here)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option("-c,--check", args->check, "check results (nccl-tests'; #wrong is N/A: no data is moved)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  add_quiet_flag(*cmd);
  cmd->callback([args, &action]() { action = [args]() { return run_collective_command(*args); }; });
}

} // namespace twinscale::cli
