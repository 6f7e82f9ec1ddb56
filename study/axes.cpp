#include "study/axes.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "common/did_you_mean.hpp"
#include "config/error.hpp"
#include "config/toml_reader.hpp"
#include "topology/placement.hpp"

namespace twinscale::study {

namespace {

using Values = KeyField<StudySpec>;

Values values_of(KeyType type, std::string doc) {
  Values v;
  v.type = type;
  v.doc = std::move(doc);
  return v;
}
Values integers(int64_t lo, int64_t hi, std::string doc) {
  return values_of(KeyType::Integer, std::move(doc)).range(lo, hi);
}
Values positive_numbers(std::string doc) {
  return values_of(KeyType::Number, std::move(doc)).range_number(1e-300, 1e300);
}

/// An axis of the study's own: no table key.
AxisDef own(std::string name, Values v) {
  AxisDef d;
  d.name = std::move(name);
  d.values = std::move(v);
  return d;
}

/// The valid values of table key `f`, as an axis checks them.
template <class Spec>
Values values_from(const KeyField<Spec>& f) {
  Values v;
  v.type = f.type;
  v.unit = f.unit;
  v.int_min = f.int_min, v.int_max = f.int_max;
  v.num_min = f.num_min, v.num_max = f.num_max;
  v.names = f.names;
  v.accepts_bool = f.accepts_bool, v.true_name = f.true_name, v.false_name = f.false_name;
  v.values_doc = f.values_doc;
  v.doc = f.doc;
  return v;
}

AxisDef job_axis(std::string name, const schedules::JobKey& f) {
  AxisDef d;
  d.name = std::move(name);
  d.target = AxisTarget::Job;
  d.job_key = &f;
  d.values = values_from(f);
  return d;
}

AxisDef cluster_axis(std::string name, const config::ClusterKey& f) {
  AxisDef d;
  d.name = std::move(name);
  d.target = AxisTarget::Cluster;
  d.cluster_key = &f;
  // a catalogue model (read by hand, a name): the reader fills the model's figures
  d.in_document = f.by_hand && f.type == KeyType::Name;
  d.values = values_from(f);
  return d;
}

const schedules::JobKey& job_key(std::string_view key) {
  if (const auto* f = schedules::find_job_key(key)) return *f;
  throw std::logic_error("the job key table has no key '" + std::string(key) + "'");
}

std::vector<AxisDef> make_short_axes() {
  const auto placement = [] {
    Values v = values_of(KeyType::Name, "the placement of ranks on the servers");
    v.names = enum_names_vector(topology::kPlacementPolicyNames);
    return v;
  };
  return {
      own("job", values_of(KeyType::String, "job presets or files (the base job is replaced)")),
      own("cluster", values_of(KeyType::String, "cluster presets or files")),
      own("gpus", integers(1, INT64_MAX, "total GPUs; dp = gpus / (tp·cp·pp)")),
      job_axis("global_batch", job_key("parallel.global_batch")),
      job_axis("tp", job_key("parallel.tp")),
      job_axis("pp", job_key("parallel.pp")),
      job_axis("vpp", job_key("parallel.vpp")),
      job_axis("cp", job_key("parallel.cp")),
      job_axis("ep", job_key("parallel.ep")),
      job_axis("micro_batch", job_key("parallel.micro_batch")),
      job_axis("zero_stage", job_key("parallel.zero_stage")),
      job_axis("sequence_parallel", job_key("parallel.sequence_parallel")),
      job_axis("pipeline", job_key("schedule.pipeline")),
      job_axis("overlap_dp", job_key("schedule.overlap.dp")),
      job_axis("overlap_pp", job_key("schedule.overlap.pp")),
      job_axis("overlap_tp", job_key("schedule.overlap.tp")),
      job_axis("tp_chunks", job_key("schedule.overlap.tp_chunks")),
      own("recompute", values_of(KeyType::Boolean, "full activation recomputation on or off (the selective "
                                                   "flags untouched; job.schedule.recompute sets all four kinds)")),
      job_axis("flash_attention", job_key("schedule.operators.flash_attention")),
      own("placement", placement()),
      own("seed", integers(0, INT64_MAX, "simulator seed (ECMP hashing, random placement)")),
      own("oversubscription", positive_numbers("down:up ratio of the ToR tier, fabric.oversubscription[0] (a "
                                               "ratio the switch radix cannot split makes the point infeasible)")),
      cluster_axis("nic_gbit_per_s", config::cluster_key("server.nic_gbit_per_s")),
      cluster_axis("nics", config::cluster_key("server.nics")),
      cluster_axis("rails", config::cluster_key("server.rails")),
      own("fault_rate_scale", positive_numbers("every fault category's rate × this (campaign)")),
      own("checkpoint_interval_s",
          positive_numbers("work between checkpoints (campaign; default: the recovery policy's interval)")),
  };
}

/// Why a table key cannot be an axis ("" when it can).
std::string refusal(AxisTarget target, const std::string& key) {
  if (target == AxisTarget::Job) {
    if (key == "parallel.dp") return "is derived: dp = gpus / (tp·cp·pp); vary gpus, tp, cp or pp";
    if (key == "cluster") return "names a cluster; vary clusters with the axis cluster";
    if (key == "software") return "names a software stack; vary jobs (files naming each stack) with the axis job";
    return "";
  }
  if (key == "gpus") return "is the job's GPU count; vary it with the axis gpus";
  if (key == "fabric.oversubscription") return "is an array; vary its first tier with the axis oversubscription";
  if (key.rfind("gpu_groups.", 0) == 0)
    return "is a key of the array of tables [[gpu_groups]]; vary whole cluster files with the axis cluster";
  return "";
}

struct AxisIndex {
  std::vector<AxisDef> axes;                  // canonical order
  size_t short_count = 0;                     // the short axes come first
  std::map<std::string, size_t> by_name;      // every spelling, long ones of aliases included
  std::map<std::string, std::string> refused; // "job.parallel.dp" → why
};

const AxisIndex& axis_index() {
  static const AxisIndex index = [] {
    AxisIndex x;
    x.axes = make_short_axes();
    x.short_count = x.axes.size();
    for (size_t i = 0; i < x.axes.size(); ++i) {
      const AxisDef& d = x.axes[i];
      x.by_name[d.name] = i;
      if (d.job_key) x.by_name["job." + d.job_key->key] = i;
      if (d.cluster_key) x.by_name["cluster." + d.cluster_key->key] = i;
    }
    x.by_name["job.gpus"] = x.by_name.at("gpus");
    const auto add = [&x](AxisTarget target, const std::string& key, AxisDef d) {
      const std::string name = (target == AxisTarget::Job ? "job." : "cluster.") + key;
      if (key.empty() || x.by_name.count(name)) return;
      if (std::string why = refusal(target, key); !why.empty()) {
        x.refused[name] = why;
        return;
      }
      x.by_name[name] = x.axes.size();
      x.axes.push_back(std::move(d));
    };
    for (const auto& f : schedules::job_keys()) add(AxisTarget::Job, f.key, job_axis("job." + f.key, f));
    for (const auto& f : config::cluster_keys()) add(AxisTarget::Cluster, f.key, cluster_axis("cluster." + f.key, f));
    for (size_t i = 0; i < x.axes.size(); ++i) x.axes[i].rank = i;
    return x;
  }();
  return index;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

[[noreturn]] void fail(const std::string& file, const std::string& key, const std::string& why) {
  throw config::ConfigError(file + ": key '" + key + "' " + why);
}

/// One value of axis `d` (element `at` of its array), checked.
Value read_value(const AxisDef& d, const toml::node& e, const std::string& file, const std::string& at) {
  const Values& v = d.values;
  const std::string valid = "; valid: " + key_range_text(v);
  switch (v.type) {
  case KeyType::Integer: {
    const auto x = e.value_exact<int64_t>();
    if (!x) fail(file, at, "must be an integer" + valid);
    if (*x < v.int_min || *x > v.int_max)
      fail(file, at,
           "is " + std::to_string(*x) + "; must be in [" + std::to_string(v.int_min) + ", " +
               (v.int_max == INT64_MAX ? std::string("∞") : std::to_string(v.int_max)) + "]");
    return *x;
  }
  case KeyType::Number: {
    std::optional<double> x;
    if (auto f = e.value_exact<double>())
      x = *f;
    else if (auto i = e.value_exact<int64_t>())
      x = static_cast<double>(*i);
    if (!x) fail(file, at, "must be a number" + valid);
    if (!(*x >= v.num_min && *x <= v.num_max && *x < 1e300 && *x > -1e300))
      fail(file, at, "is " + number_text(*x) + "; must be a finite " + key_range_text(v));
    return *x;
  }
  case KeyType::Boolean: {
    const auto x = e.value_exact<bool>();
    if (!x) fail(file, at, "must be true or false");
    return *x;
  }
  case KeyType::String: {
    const auto x = e.value_exact<std::string>();
    if (!x) fail(file, at, "must be a string");
    if (d.name == "job") return config::resolve_document_reference(file, *x, at, "jobs");
    if (d.name == "cluster") return config::resolve_document_reference(file, *x, at, "clusters");
    return *x;
  }
  case KeyType::Name: {
    if (v.accepts_bool)
      if (const auto b = e.value_exact<bool>()) return *b ? v.true_name : v.false_name;
    const auto x = e.value_exact<std::string>();
    if (!x) fail(file, at, "must be a string" + valid);
    if (std::find(v.names.begin(), v.names.end(), *x) == v.names.end())
      fail(file, at, "is \"" + *x + "\"; valid values: " + join(v.names));
    return *x;
  }
  }
  fail(file, at, "has a type no axis takes");
}

} // namespace

const std::vector<AxisDef>& short_axes() {
  static const std::vector<AxisDef> axes = [] {
    const AxisIndex& x = axis_index();
    return std::vector<AxisDef>(x.axes.begin(), x.axes.begin() + static_cast<std::ptrdiff_t>(x.short_count));
  }();
  return axes;
}

std::vector<std::string> short_axis_names() {
  std::vector<std::string> out;
  for (const AxisDef& d : short_axes()) out.push_back(d.name);
  return out;
}

std::optional<AxisDef> find_axis(std::string_view name, std::string& why) {
  const AxisIndex& x = axis_index();
  if (auto it = x.by_name.find(std::string(name)); it != x.by_name.end()) return x.axes[it->second];
  if (auto it = x.refused.find(std::string(name)); it != x.refused.end()) {
    why = it->second;
    return std::nullopt;
  }
  const bool job = name.rfind("job.", 0) == 0, cluster = name.rfind("cluster.", 0) == 0;
  std::vector<std::string> names; // candidates in table order (the first nearest wins a tie)
  if (job)
    for (const auto& f : schedules::job_keys())
      if (!f.key.empty() && x.by_name.count("job." + f.key)) names.push_back("job." + f.key);
  if (cluster)
    for (const auto& f : config::cluster_keys())
      if (x.by_name.count("cluster." + f.key)) names.push_back("cluster." + f.key);
  if (!job && !cluster) names = short_axis_names();
  const auto near = nearest_name(names, name);
  const std::string hint = near ? " (did you mean '" + *near + "'?)" : "";
  if (job || cluster)
    why = std::string("is not a key of the ") + (job ? "job" : "cluster") + " key table" + hint +
          "; docs/keys.md lists every key";
  else
    why = "is not an axis" + hint + "; valid axes: " + join(short_axis_names()) +
          ", or \"job.KEY\" / \"cluster.KEY\" for any key of docs/keys.md (e.g. \"job.parallel.cp\")";
  return std::nullopt;
}

const AxisDef& axis_def(const std::string& name) {
  const AxisIndex& x = axis_index();
  if (auto it = x.by_name.find(name); it != x.by_name.end()) return x.axes[it->second];
  throw std::logic_error("no axis '" + name + "'");
}

std::string axis_key(const std::string& written) {
  return written.find('.') == std::string::npos ? "axes." + written : "axes.\"" + written + "\"";
}

Axis read_axis(const AxisDef& d, const std::string& written, const toml::node& node, const std::string& file) {
  const std::string key = axis_key(written);
  const toml::array* arr = node.as_array();
  if (!arr) fail(file, key, "must be an array of values, e.g. " + key.substr(5) + " = [...]");
  if (arr->empty()) fail(file, key, "is empty; give at least one value (or remove the axis)");
  Axis a{d.name, {}};
  for (size_t i = 0; i < arr->size(); ++i)
    a.values.push_back(read_value(d, (*arr)[i], file, key + "[" + std::to_string(i) + "]"));
  std::map<Value, size_t> first; // distinct values, in n log n (a pairwise check of 10^5 values took 10 s)
  for (size_t i = 0; i < a.values.size(); ++i)
    if (const auto [at, fresh] = first.emplace(a.values[i], i); !fresh)
      fail(file, key + "[" + std::to_string(i) + "]",
           "repeats the value " + to_text(a.values[i]) + " of [" + std::to_string(at->second) +
               "]; axis values must be distinct");
  return a;
}

} // namespace twinscale::study
