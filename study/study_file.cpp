// Study file format (TOML), `twinscale sweep STUDY.toml`. Every key, its type and default:
//
//   name = "gpt175b-12288"        string, required: labels the results store
//
//   [base]                        required: the job every point starts from
//   job = "gpt-175b-megascale"    string, required: job preset name or job file (a path
//                                 relative to the study file's directory)
//   cluster = ""                  string: cluster preset or file; "" = the job's cluster
//   gpus = 0                      integer ≥ 0: total GPUs, dp = gpus / (tp·pp); 0 = the job's
//   global_batch = 0              integer ≥ 0: sequences per iteration; 0 = the job's
//   placement = "linear"          "linear" | "tor-aware" | "random"
//   seed = 1                      integer ≥ 0: simulator seed (ECMP hashing, random placement)
//
//   [sample]                      optional
//   method = "grid"               "grid": every combination of the axes' values;
//                                 "random": `points` distinct combinations drawn uniformly
//                                 without replacement; "lhs": a Latin hypercube of `points`
//                                 rows (each axis' values stratified, duplicates dropped)
//   points = 0                    integer in [1, 10000000], required for random and lhs
//   seed = 1                      integer ≥ 0: seed of the sampler (same seed, same points)
//
//   [axes]                        required, at least one axis; each an array of distinct
//                                 values, applied on top of [base] in this order:
//   job = ["gpt-175b-megascale"]  strings: job presets or files (the base job is replaced)
//   cluster = ["megascale-ampere"] strings: cluster presets or files
//   gpus = [12288]                integers ≥ 1: total GPUs (dp re-derived)
//   global_batch = [6144]         integers ≥ 1
//   tp, pp, vpp = [8]             integers ≥ 1: tensor, pipeline, virtual-pipeline sizes;
//                                 dp = gpus / (tp·pp·cp) (gpus: the axis, [base] or the job's)
//   cp = [1, 2]                   integers ≥ 1: context-parallel size (ranks per sequence)
//   ep = [1, 8]                   integers ≥ 1: expert-parallel size (mixture-of-experts jobs)
//   micro_batch = [1, 2]          integers ≥ 1
//   zero_stage = [0, 1, 2, 3]     integers in [0, 3] (3: parameters sharded too)
//   sequence_parallel = [true]    booleans
//   pipeline = ["interleaved"]    "1f1b" | "interleaved" | "zb-h1" (schedules::kPipelineKindNames);
//                                 without this axis a point with vpp > 1 is interleaved
//                                 and one with vpp = 1 keeps the job's 1f1b or zb-h1
//   overlap_dp, overlap_pp, overlap_tp = [true, false]   booleans (M4, M5, M6)
//   tp_chunks = [1, 4]            integers in [1, 64] (M6)
//   recompute = [false, true]     booleans: full activation recomputation
//   flash_attention = [true]      booleans (M7)
//   placement = ["linear", "tor-aware", "random"]
//   seed = [1, 2, 3]              integers ≥ 0: simulator seed
//   oversubscription = [1, 2]     numbers > 0: down:up ratio of the ToR tier (cluster variant;
//                                 a ratio the switch radix cannot split makes the point infeasible)
//   nic_gbit_per_s = [200, 400]   numbers > 0: NIC speed per direction (cluster variant; the
//                                 values and setter of the cluster key server.nic_gbit_per_s)
//   nics = [8, 4]                 integers in [1, 1024]: NICs per server (cluster variant, key
//                                 server.nics; the rails become min(rails, nics))
//   rails = [8, 4, 1]             integers in [1, 1024]: rails per server (cluster variant,
//                                 key server.rails; ≤ NICs)
//   fault_rate_scale = [0.5, 1, 2] numbers > 0: every fault category's rate × this (campaign)
//   checkpoint_interval_s = [1800, 3600]  numbers > 0: work between checkpoints (campaign;
//                                 default: the recovery policy's interval)
//
//   [filters]                     optional
//   memory_fits = true            boolean: a point whose largest pipeline stage needs more
//                                 than the GPU's memory is "infeasible" (not simulated);
//                                 false: memory is reported, not enforced. Divisibility
//                                 (schedules::check_job) is always enforced.
//
//   [evaluate]                    optional: what each feasible point runs
//   what = "simulate"             "lower" (lower the schedule), "memory" (the memory
//                                 estimate only), "simulate" (one iteration), "campaign"
//                                 (one iteration simulated, then weeks of training under
//                                 faults: ETTR; see [campaign])
//   mode = "analytic"             "analytic" | "flow" (what = "simulate")
//   flow_best = 0                 integer ≥ 0: after an analytic study, simulate the best
//                                 K points (by analytic MFU) again in flow mode
//
//   [campaign]                    optional, for what = "campaign" (as `twinscale campaign`)
//   faults = "llama3-405b"        fault model: preset name or TOML file
//   recovery = "megascale"        recovery + checkpoint policy: preset name or TOML file
//   days = 28                     number > 0: wall time simulated per seed
//   seeds = 4                     integer in [1, 1000]: independent runs (ETTR mean and 95 % CI)
//   seed = 1                      integer ≥ 0: first seed
#include "study/study_file.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "config/cluster_keys.hpp"
#include "config/presets.hpp"
#include "config/toml_reader.hpp"
#include "schedules/job.hpp"
#include "topology/placement.hpp"

namespace twinscale::study {

namespace {

enum class Kind : uint8_t { Int, Number, Bool, String };

struct AxisDef {
  const char* name;
  Kind kind;
  int64_t min; // integers; numbers: must be > 0 when min > 0
  int64_t max;
  std::vector<std::string> choices; // strings: valid values (empty: any, e.g. files)
};

/// A cluster-variant axis: its valid values are those of the cluster key it sets.
AxisDef cluster_axis(const char* name, std::string_view key) {
  const config::ClusterKey& f = config::cluster_key(key);
  if (f.type == KeyType::Integer) return {name, Kind::Int, f.int_min, f.int_max, {}};
  return {name, Kind::Number, f.num_min > 0 ? 1 : 0, 0, {}};
}

const std::vector<AxisDef>& axis_defs() {
  static const std::vector<AxisDef> defs = {
      {"job", Kind::String, 0, 0, {}},
      {"cluster", Kind::String, 0, 0, {}},
      {"gpus", Kind::Int, 1, INT64_MAX, {}},
      {"global_batch", Kind::Int, 1, INT64_MAX, {}},
      {"tp", Kind::Int, 1, 4096, {}},
      {"pp", Kind::Int, 1, 4096, {}},
      {"vpp", Kind::Int, 1, 4096, {}},
      {"cp", Kind::Int, 1, 4096, {}},
      {"ep", Kind::Int, 1, 4096, {}},
      {"micro_batch", Kind::Int, 1, INT64_MAX, {}},
      {"zero_stage", Kind::Int, 0, 3, {}},
      {"sequence_parallel", Kind::Bool, 0, 0, {}},
      {"pipeline", Kind::String, 0, 0, enum_names_vector(schedules::kPipelineKindNames)},
      {"overlap_dp", Kind::Bool, 0, 0, {}},
      {"overlap_pp", Kind::Bool, 0, 0, {}},
      {"overlap_tp", Kind::Bool, 0, 0, {}},
      {"tp_chunks", Kind::Int, 1, 64, {}},
      {"recompute", Kind::Bool, 0, 0, {}},
      {"flash_attention", Kind::Bool, 0, 0, {}},
      {"placement", Kind::String, 0, 0, enum_names_vector(topology::kPlacementPolicyNames)},
      {"seed", Kind::Int, 0, INT64_MAX, {}},
      {"oversubscription", Kind::Number, 1, 0, {}}, // fabric.oversubscription[0], a down:up ratio > 0
      cluster_axis("nic_gbit_per_s", "server.nic_gbit_per_s"),
      cluster_axis("nics", "server.nics"),
      cluster_axis("rails", "server.rails"),
      {"fault_rate_scale", Kind::Number, 1, 0, {}},
      {"checkpoint_interval_s", Kind::Number, 1, 0, {}},
  };
  return defs;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

/// A job, cluster, fault or recovery reference under the path rule of every document that
/// names another (config::resolve_document_reference): a preset name stays as is, a file
/// must lie in the study file's folder (no "../", no absolute path elsewhere, no device).
std::string resolve(const std::string& file, const std::string& key, const std::string& ref, const std::string& kind) {
  return config::resolve_document_reference(file, ref, key, kind);
}

[[noreturn]] void fail(const std::string& file, const std::string& key, const std::string& why) {
  throw config::ConfigError(file + ": key '" + key + "' " + why);
}

Axis read_axis(const AxisDef& d, const toml::node& node, const std::string& file) {
  const std::string key = std::string("axes.") + d.name;
  const toml::array* arr = node.as_array();
  if (!arr) fail(file, key, "must be an array of values, e.g. " + key.substr(5) + " = [...]");
  if (arr->empty()) fail(file, key, "is empty; give at least one value (or remove the axis)");
  Axis a{d.name, {}};
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::node& e = (*arr)[i];
    const std::string at = key + "[" + std::to_string(i) + "]";
    switch (d.kind) {
    case Kind::Int: {
      auto v = e.value_exact<int64_t>();
      if (!v) fail(file, at, "must be an integer");
      if (*v < d.min || *v > d.max)
        fail(file, at,
             "is " + std::to_string(*v) + "; must be in [" + std::to_string(d.min) + ", " +
                 (d.max == INT64_MAX ? std::string("∞") : std::to_string(d.max)) + "]");
      a.values.emplace_back(*v);
      break;
    }
    case Kind::Number: {
      std::optional<double> v;
      if (auto x = e.value_exact<double>())
        v = *x;
      else if (auto y = e.value_exact<int64_t>())
        v = static_cast<double>(*y);
      if (!v) fail(file, at, "must be a number");
      if (!(*v > 0) || !(*v < 1e300)) fail(file, at, "must be a finite number > 0");
      a.values.emplace_back(*v);
      break;
    }
    case Kind::Bool: {
      auto v = e.value_exact<bool>();
      if (!v) fail(file, at, "must be true or false");
      a.values.emplace_back(*v);
      break;
    }
    case Kind::String: {
      auto v = e.value_exact<std::string>();
      if (!v) fail(file, at, "must be a string");
      if (!d.choices.empty() && std::find(d.choices.begin(), d.choices.end(), *v) == d.choices.end())
        fail(file, at, "is \"" + *v + "\"; valid values: " + join(d.choices));
      std::string s = *v;
      if (a.name == "job") s = resolve(file, at, s, "jobs");
      if (a.name == "cluster") s = resolve(file, at, s, "clusters");
      a.values.emplace_back(s);
      break;
    }
    }
  }
  std::map<Value, size_t> first; // distinct values, in n log n (a pairwise check of 10^5 values took 10 s)
  for (size_t i = 0; i < a.values.size(); ++i)
    if (const auto [at, fresh] = first.emplace(a.values[i], i); !fresh)
      fail(file, key + "[" + std::to_string(i) + "]",
           "repeats the value " + to_text(a.values[i]) + " of [" + std::to_string(at->second) +
               "]; axis values must be distinct");
  return a;
}

} // namespace

std::string to_text(const Value& v) {
  struct {
    std::string operator()(int64_t x) const { return std::to_string(x); }
    std::string operator()(double x) const {
      std::ostringstream o;
      o.precision(17);
      o << x;
      return o.str();
    }
    std::string operator()(bool x) const { return x ? "true" : "false"; }
    std::string operator()(const std::string& x) const { return x; }
  } visit;
  return std::visit(visit, v);
}

const std::vector<std::string>& axis_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& d : axis_defs()) n.emplace_back(d.name);
    return n;
  }();
  return names;
}

StudySpec parse_study(std::string_view text, const std::string& file) {
  const toml::table root = config::parse_toml(text, file);
  config::TableReader top(root, file);
  StudySpec s;
  s.file = file;
  s.name = top.get_string("name");
  if (s.name.empty()) top.fail("name", "is empty; give the study a name");

  config::TableReader b = top.table("base", true);
  s.job = resolve(file, "base.job", b.get_string("job"), "jobs");
  s.cluster = resolve(file, "base.cluster", b.get_string("cluster", std::string()), "clusters");
  s.gpus = b.get_int("gpus", 0, 0);
  s.global_batch = b.get_int("global_batch", 0, 0);
  s.placement = enum_name(topology::kPlacementPolicyNames,
                          b.get_enum("placement", topology::kPlacementPolicyNames, topology::PlacementPolicy::Linear));
  s.seed = static_cast<uint64_t>(b.get_int("seed", 1, 0));
  b.finish();

  config::TableReader sm = top.table("sample");
  s.method = sm.get_enum<SampleMethod>(
      "method", {{"grid", SampleMethod::Grid}, {"random", SampleMethod::Random}, {"lhs", SampleMethod::LatinHypercube}},
      SampleMethod::Grid);
  if (s.method == SampleMethod::Grid) {
    if (sm.has("points"))
      sm.fail("points", "is only for method = \"random\" or \"lhs\"; a grid takes every combination");
  } else {
    s.points = sm.get_int("points", std::nullopt, 1, kMaxStudyPoints);
  }
  s.sample_seed = static_cast<uint64_t>(sm.get_int("seed", 1, 0));
  sm.finish();

  top.table("axes", true); // marks the key read; its entries are checked below
  const toml::table* axes = root.get_as<toml::table>("axes");
  if (!axes) throw config::ConfigError(file + ": key 'axes' must be a table [axes]");
  for (auto&& [k, v] : *axes) {
    bool known = false;
    for (const auto& d : axis_defs()) known |= k.str() == d.name;
    if (!known)
      throw config::ConfigError(file + ": unknown key 'axes." + std::string(k.str()) +
                                "'; valid axes: " + join(axis_names()));
  }
  for (const auto& d : axis_defs())
    if (const toml::node* n = axes->get(d.name)) s.axes.push_back(read_axis(d, *n, file));
  if (s.axes.empty())
    throw config::ConfigError(file + ": key 'axes' has no axis; vary at least one of: " + join(axis_names()));

  config::TableReader f = top.table("filters");
  s.memory_fits = f.get_bool("memory_fits", true);
  f.finish();

  config::TableReader e = top.table("evaluate");
  s.evaluation = e.get_enum<Evaluation>("what",
                                        {{"lower", Evaluation::Lower},
                                         {"memory", Evaluation::Memory},
                                         {"simulate", Evaluation::Simulate},
                                         {"campaign", Evaluation::Campaign}},
                                        Evaluation::Simulate);
  s.mode = e.get_enum<SimModeChoice>("mode", {{"analytic", SimModeChoice::Analytic}, {"flow", SimModeChoice::Flow}},
                                     SimModeChoice::Analytic);
  s.flow_best = e.get_int("flow_best", 0, 0, 1'000'000);
  if (s.flow_best > 0 && (s.evaluation != Evaluation::Simulate || s.mode != SimModeChoice::Analytic))
    e.fail("flow_best",
           "needs what = \"simulate\" and mode = \"analytic\" (it re-simulates the best analytic points in flow mode)");
  e.finish();

  config::TableReader c = top.table("campaign");
  s.faults = resolve(file, "campaign.faults", c.get_string("faults", s.faults), "faults");
  s.recovery = resolve(file, "campaign.recovery", c.get_string("recovery", s.recovery), "recovery");
  s.days = c.get_double("days", 28.0, 1e-6, 36500);
  s.seeds = c.get_int("seeds", 4, 1, 1000);
  s.campaign_seed = static_cast<uint64_t>(c.get_int("seed", 1, 0));
  c.finish();
  const bool campaign_axis = std::any_of(s.axes.begin(), s.axes.end(), [](const Axis& a) {
    return a.name == "fault_rate_scale" || a.name == "checkpoint_interval_s";
  });
  if (s.evaluation != Evaluation::Campaign && (campaign_axis || top.has("campaign")))
    e.fail("what", "is not \"campaign\", but the study has campaign settings ([campaign], fault_rate_scale or "
                   "checkpoint_interval_s); set what = \"campaign\" or remove them");
  top.finish();
  return s;
}

StudySpec load_study(const std::string& path) {
  return parse_study(config::read_config_file(path, "study file"), path); // a regular file of ≤ 4 MiB
}

} // namespace twinscale::study
