#include "study/evaluate.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "config/cluster_file.hpp"
#include "config/cluster_keys.hpp"
#include "config/error.hpp"
#include "config/fault_file.hpp"
#include "config/job_file.hpp"
#include "config/presets.hpp"
#include "config/recovery_file.hpp"
#include "config/scenario.hpp"
#include "faults/campaign.hpp"
#include "faults/error.hpp"
#include "schedules/check_job.hpp"
#include "schedules/error.hpp"
#include "schedules/memory.hpp"
#include "schedules/schedule.hpp"
#include "sim/simulate.hpp"
#include "study/axes.hpp"
#include "study/error.hpp"
#include "topology/fabric.hpp"

namespace twinscale::study {

namespace {

const std::string* str(const Point& p, const char* axis) {
  const Value* v = p.find(axis);
  return v ? &std::get<std::string>(*v) : nullptr;
}
std::optional<int64_t> num(const Point& p, const char* axis) {
  const Value* v = p.find(axis);
  if (!v) return std::nullopt;
  return std::get<int64_t>(*v);
}
std::optional<double> real(const Point& p, const char* axis) {
  const Value* v = p.find(axis);
  if (!v) return std::nullopt;
  return std::get<double>(*v);
}
std::optional<bool> flag(const Point& p, const char* axis) {
  const Value* v = p.find(axis);
  if (!v) return std::nullopt;
  return std::get<bool>(*v);
}

bool is_job_preset(const std::string& name) {
  for (const auto& n : config::preset_names("jobs"))
    if (n == name) return true;
  return false;
}

std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}

/// The point's job: the base (or axis) job with every job axis applied, dp re-derived.
/// Returns "" or the reason the combination is impossible.
std::string effective_job(const StudySpec& spec, const Point& p, schedules::JobSpec& job) {
  const std::string name = str(p, "job") ? *str(p, "job") : spec.job;
  try {
    job = is_job_preset(name) ? config::load_job_preset(name) : config::load_job(name);
  } catch (const config::ConfigError& e) {
    throw config::ConfigError(spec.file + ": key '" + (str(p, "job") ? "axes.job" : "base.job") + "': " + e.what());
  }
  auto& par = job.parallel;
  int64_t gpus = par.gpus();
  if (spec.gpus > 0) gpus = spec.gpus;
  if (auto g = num(p, "gpus")) gpus = *g;
  if (spec.global_batch > 0) par.global_batch = spec.global_batch;
  // every axis of a job key through the key's setter (short aliases and "job.KEY" alike),
  // in canonical order, as a job file stating the key would set it
  for (const auto& [axis, value] : p.values)
    if (const AxisDef& d = axis_def(axis); d.job_key) d.job_key->set(job, value);
  auto& opt = job.options;
  if (!str(p, "pipeline")) { // without the axis: check_job wants interleaved exactly when vpp > 1
    if (par.vpp > 1)
      opt.pipeline = schedules::PipelineKind::Interleaved;
    else if (opt.pipeline == schedules::PipelineKind::Interleaved) // ZB-H1 (vpp 1) is kept
      opt.pipeline = schedules::PipelineKind::OneFOneB;
  }
  if (auto v = flag(p, "recompute")) opt.recompute = *v;
  for (const auto& [axis, value] : p.values) // a key that means nothing here: refused, as a file stating it
    if (const AxisDef& d = axis_def(axis); d.job_key && d.job_key->applies && !d.job_key->applies(job))
      return "job." + d.job_key->key + " " + d.job_key->applies_why;
  const int64_t replica = par.tp * par.pp * par.cp; // context parallel: cp ranks per sequence
  if (gpus % replica != 0)
    return "gpus " + std::to_string(gpus) + " is not a multiple of tp·pp" + (par.cp > 1 ? "·cp" : "") + " = " +
           std::to_string(replica);
  par.dp = gpus / replica;
  try {
    schedules::check_job(job);
  } catch (const schedules::JobError& e) {
    return e.what();
  }
  return {};
}

/// The effective job's layout a point stores.
void store_layout(const schedules::ParallelSpec& par, PointResult& r) {
  r.gpus = par.gpus();
  r.tp = par.tp;
  r.cp = par.cp;
  r.ep = par.ep;
  r.pp = par.pp;
  r.vpp = par.vpp;
  r.dp = par.dp;
  r.micro_batch = par.micro_batch;
  r.global_batch = par.global_batch;
}

/// The simulated iteration's figures a point stores.
void store_iteration(const sim::SimReport& s, PointResult& r) {
  r.iteration_time_s = s.iteration_time_s;
  r.tokens_per_s = s.tokens_per_s;
  r.tflops_per_gpu = s.tflops_per_gpu;
  r.mfu = s.mfu;
  r.compute_s = s.breakdown.compute_s;
  r.exposed_tp_s = s.breakdown.exposed_tp_s;
  r.exposed_ep_s = s.breakdown.exposed_ep_s;
  r.exposed_pp_s = s.breakdown.exposed_pp_s;
  r.exposed_dp_s = s.breakdown.exposed_dp_s;
  r.bubble_s = s.breakdown.bubble_s;
}

/// Axes that change the cluster, the placement or the campaign but not the job:
/// lowering does not read them (the cluster's GPU memory enters through the target).
bool lowering_ignores(const std::string& axis) {
  if (axis_def(axis).target == AxisTarget::Cluster) return true;
  for (const char* a :
       {"cluster", "placement", "seed", "oversubscription", "fault_rate_scale", "checkpoint_interval_s"})
    if (axis == a) return true;
  return false;
}

/// A catalogue model axis as the edit `--set cluster.KEY=VALUE` makes to the cluster document.
config::KeyOverride document_edit(const AxisDef& d, const Value& value) {
  config::KeyOverride o;
  const std::string& key = d.cluster_key->key;
  for (size_t at = 0;;) {
    const size_t dot = key.find('.', at);
    o.path.push_back(key.substr(at, dot - at));
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  o.value = key_value_text(value);
  o.text = "cluster." + key + "=" + to_text(value);
  o.takes_text = true;
  return o;
}

struct CampaignInputs {
  faults::FaultModel model;
  config::RecoveryFile recovery;
};

} // namespace

std::string to_json(const PointResult& r) {
  nlohmann::json j;
  j["id"] = r.id;
  j["status"] = std::string(to_string(r.status));
  j["reason"] = r.reason;
  j["job"] = {r.gpus, r.tp, r.pp, r.vpp, r.dp, r.micro_batch, r.global_batch, r.cp, r.ep};
  j["memory"] = {r.memory_bytes, r.gpu_memory_bytes};
  j["ops"] = r.ops;
  j["mode"] = r.mode;
  j["sim"] = {r.iteration_time_s, r.tokens_per_s, r.tflops_per_gpu, r.mfu,      r.compute_s,
              r.exposed_tp_s,     r.exposed_pp_s, r.exposed_dp_s,   r.bubble_s, r.exposed_ep_s};
  if (r.campaign) j["campaign"] = {r.ettr, r.ettr_ci95, r.interruptions, r.lost_work_s};
  return j.dump();
}

PointResult point_result_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  PointResult r;
  r.id = j.at("id");
  r.status = point_status_from(j.at("status").get<std::string>());
  r.reason = j.at("reason");
  const auto& jb = j.at("job");
  r.gpus = jb.at(0);
  r.tp = jb.at(1);
  r.pp = jb.at(2);
  r.vpp = jb.at(3);
  r.dp = jb.at(4);
  r.micro_batch = jb.at(5);
  r.global_batch = jb.at(6);
  r.cp = jb.at(7);
  r.ep = jb.at(8);
  r.memory_bytes = j.at("memory").at(0);
  r.gpu_memory_bytes = j.at("memory").at(1);
  r.ops = j.at("ops");
  r.mode = j.at("mode");
  const auto& s = j.at("sim");
  r.iteration_time_s = s.at(0);
  r.tokens_per_s = s.at(1);
  r.tflops_per_gpu = s.at(2);
  r.mfu = s.at(3);
  r.compute_s = s.at(4);
  r.exposed_tp_s = s.at(5);
  r.exposed_pp_s = s.at(6);
  r.exposed_dp_s = s.at(7);
  r.bubble_s = s.at(8);
  r.exposed_ep_s = s.at(9);
  if (j.contains("campaign")) {
    const auto& c = j.at("campaign");
    r.campaign = true;
    r.ettr = c.at(0);
    r.ettr_ci95 = c.at(1);
    r.interruptions = c.at(2);
    r.lost_work_s = c.at(3);
  }
  return r;
}

Evaluator::Evaluator(const StudySpec& spec) : spec_(spec) {
  // Every job and cluster the study names must load, before any point runs.
  auto job = [&](const std::string& name, const std::string& key) {
    try {
      if (is_job_preset(name))
        config::load_job_preset(name);
      else
        config::load_job(name);
    } catch (const std::exception& e) { // ConfigError, JobError
      throw config::ConfigError(spec.file + ": key '" + key + "': " + e.what());
    }
  };
  auto cluster = [&](const std::string& name, const std::string& key) {
    if (clusters_.count(name)) return;
    try {
      clusters_[name] = std::make_shared<const config::ClusterFile>(config::load_cluster_file(name));
    } catch (const config::ConfigError& e) {
      throw config::ConfigError(spec.file + ": key '" + key + "': " + e.what());
    }
  };
  job(spec.job, "base.job");
  if (!spec.cluster.empty()) cluster(spec.cluster, "base.cluster");
  if (spec.evaluation == Evaluation::Campaign) {
    auto inputs = std::make_shared<CampaignInputs>();
    try {
      inputs->model = config::resolve_fault_model(spec.faults);
    } catch (const std::exception& e) {
      throw config::ConfigError(spec.file + ": key 'campaign.faults': " + e.what());
    }
    try {
      inputs->recovery = config::resolve_recovery(spec.recovery);
    } catch (const std::exception& e) {
      throw config::ConfigError(spec.file + ": key 'campaign.recovery': " + e.what());
    }
    campaign_inputs_ = inputs;
  }
  for (const auto& a : spec.axes)
    for (size_t i = 0; i < a.values.size(); ++i) {
      const std::string key = "axes." + a.name + "[" + std::to_string(i) + "]";
      if (a.name == "job") job(std::get<std::string>(a.values[i]), key);
      if (a.name == "cluster") cluster(std::get<std::string>(a.values[i]), key);
    }
  for (const auto& a : spec.axes) share_schedules_ = share_schedules_ || lowering_ignores(a.name);
  share_schedules_ = share_schedules_ && !sim::per_op_forced();
}

std::shared_ptr<const schedules::Schedule> Evaluator::lowered(const Point& point, const schedules::JobSpec& job,
                                                              const schedules::LoweringTarget& target) {
  std::string key;
  for (const auto& [axis, value] : point.values) {
    if (lowering_ignores(axis)) continue;
    key += axis + '=';
    if (const auto* s = std::get_if<std::string>(&value)) key += *s;
    if (const auto* i = std::get_if<int64_t>(&value)) key += std::to_string(*i);
    if (const auto* b = std::get_if<bool>(&value)) key += *b ? "true" : "false";
    if (const auto* d = std::get_if<double>(&value)) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", *d);
      key += buf;
    }
    key += ';';
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "|%.17g|%d|", target.gpu_memory_bytes, target.check_memory ? 1 : 0);
  key += buf + target.gpu_memory_holder;
  for (size_t i = 0; i < schedules_.size(); ++i)
    if (schedules_[i].first == key) {
      auto hit = schedules_[i];
      schedules_.erase(schedules_.begin() + static_cast<std::ptrdiff_t>(i));
      schedules_.push_back(hit); // the newest last
      return hit.second;
    }
  auto schedule = std::make_shared<const schedules::Schedule>(schedules::lower(job, target));
  // a few recent schedules, at most about half a million ops in all (~60 MB)
  size_t ops = 0;
  for (const auto& prog : schedule->programs) ops += prog.ops.size();
  for (const auto& [k, s] : schedules_)
    for (const auto& prog : s->programs) ops += prog.ops.size();
  while (!schedules_.empty() && (schedules_.size() >= 4 || ops > (size_t{1} << 19))) {
    for (const auto& prog : schedules_.front().second->programs) ops -= prog.ops.size();
    schedules_.erase(schedules_.begin());
  }
  schedules_.emplace_back(std::move(key), schedule);
  return schedule;
}
Evaluator::~Evaluator() = default;

PointResult Evaluator::evaluate(const Point& point) {
  return run(point, spec_.mode == SimModeChoice::Flow &&
                        (spec_.evaluation == Evaluation::Simulate || spec_.evaluation == Evaluation::Campaign));
}

PointResult Evaluator::evaluate_flow(const Point& point) { return run(point, true); }

std::shared_ptr<const topology::Fabric> Evaluator::fabric_for(const std::string& cluster,
                                                              const std::string& variant_key,
                                                              const topology::ClusterSpec& cs, std::string& why_not) {
  // A few recent fabrics are kept: points of one study mostly share their cluster.
  char key[256];
  std::snprintf(key, sizeof key, "%s|%.17g|%.17g|%lld|%lld|%lld", cluster.c_str(), cs.fabric.oversubscription[0],
                cs.server.nic_bw_bytes_per_s, static_cast<long long>(cs.server.nics),
                static_cast<long long>(cs.server.rails), static_cast<long long>(cs.gpus));
  const std::string k = key + ("|" + variant_key);
  if (auto it = fabrics_.find(k); it != fabrics_.end()) return it->second;
  std::shared_ptr<const topology::Fabric> fabric;
  try {
    fabric = std::make_shared<const topology::Fabric>(cs);
  } catch (const topology::TopologyError& e) {
    why_not = std::string("cluster ") + cluster + ": " + e.what();
    return nullptr;
  }
  if (fabric_order_.size() >= 4) {
    routes_.erase(fabrics_.at(fabric_order_.front()).get());
    fabrics_.erase(fabric_order_.front());
    fabric_order_.erase(fabric_order_.begin());
  }
  fabrics_[k] = fabric;
  fabric_order_.push_back(k);
  routes_[fabric.get()] = sim::make_shared_routes();
  return fabric;
}

std::shared_ptr<config::ClusterFile> Evaluator::cluster_variant(const Point& point, const std::string& cluster,
                                                                std::string& variant_key, std::string& why_not) {
  std::vector<config::KeyOverride> edits;
  for (const auto& [axis, value] : point.values)
    if (const AxisDef& d = axis_def(axis); d.target == AxisTarget::Cluster) {
      if (d.in_document) edits.push_back(document_edit(d, value));
      variant_key += axis + "=" + to_text(value) + ";";
    }
  const auto file = cluster_file(cluster, point.id, edits, why_not);
  if (!file) return nullptr;
  auto variant = std::make_shared<config::ClusterFile>(*file);
  topology::ClusterSpec& cs = variant->cluster;
  if (auto v = real(point, "oversubscription")) cs.fabric.oversubscription.at(0) = *v;
  for (const auto& [axis, value] : point.values) {
    const AxisDef& d = axis_def(axis);
    if (d.target != AxisTarget::Cluster || d.in_document) continue;
    d.cluster_key->set(*variant, value);
    if (axis == "nics") cs.server.rails = std::min(cs.server.rails, std::get<int64_t>(value));
  }
  return variant;
}

PointResult Evaluator::run(const Point& point, bool flow) {
  PointResult r;
  r.id = point.id;
  auto infeasible = [&r](const std::string& why) {
    r.status = PointStatus::Infeasible;
    r.reason = why;
    return r;
  };
  schedules::JobSpec job;
  const std::string why = effective_job(spec_, point, job);
  const auto& par = job.parallel;
  store_layout(par, r);
  if (!why.empty()) return infeasible(why);

  // The cluster: preset or file (each read once, catalogue model axes made to its document),
  // then the cluster-variant axes through the keys' own setters (config/cluster_keys.cpp),
  // as a file stating them would set them.
  std::string cluster = job.cluster;
  if (!spec_.cluster.empty()) cluster = spec_.cluster;
  if (const std::string* c = str(point, "cluster")) cluster = *c;
  std::string variant_key, why_not;
  const auto variant = cluster_variant(point, cluster, variant_key, why_not);
  if (!variant) return infeasible(why_not);
  topology::ClusterSpec& cs = variant->cluster;
  cs.gpus = par.gpus();
  // The memory limit `simulate` lowers against: the tightest of [gpu] and [[gpu_groups]].
  const schedules::LoweringTarget target = config::lowering_target(cs, std::nullopt, spec_.memory_fits);
  r.gpu_memory_bytes = target.gpu_memory_bytes;

  for (int64_t s = 0; s < par.pp; ++s)
    r.memory_bytes = std::max(r.memory_bytes, schedules::estimate_memory(job, s).total_bytes());
  if (spec_.memory_fits && r.memory_bytes > r.gpu_memory_bytes)
    return infeasible("needs " + gb(r.memory_bytes) + " per GPU > " + gb(r.gpu_memory_bytes) + " of " +
                      (target.gpu_memory_holder.empty() ? cs.gpu.model : target.gpu_memory_holder));
  if (spec_.evaluation == Evaluation::Memory) return r;
  if (spec_.evaluation == Evaluation::Lower) {
    try {
      for (const auto& prog : schedules::lower(job, target).programs) r.ops += static_cast<int64_t>(prog.ops.size());
    } catch (const schedules::JobError& e) {
      return infeasible(e.what());
    }
    return r;
  }

  const auto fabric = fabric_for(cluster, variant_key, cs, why_not);
  if (!fabric) return infeasible(why_not);
  // The setup `twinscale simulate` runs with its default options (config::Scenario).
  config::ScenarioSpec setup;
  setup.job = job;
  setup.cluster = cluster;
  setup.cluster_file = variant;
  setup.fabric = fabric;
  setup.check_memory = spec_.memory_fits;
  setup.placement =
      config::parse_placement(str(point, "placement") ? *str(point, "placement") : spec_.placement, "placement");
  setup.seed = num(point, "seed") ? static_cast<uint64_t>(*num(point, "seed")) : spec_.seed;
  setup.sim.mode = flow ? sim::SimMode::Flow : sim::SimMode::Analytic;
  if (!sim::per_op_forced()) setup.sim.shared_routes = routes_.at(fabric.get());
  setup.sim.per_rank = false; // a point stores no per-rank figure
  setup.sim.helper_thread = helper_thread_ ? HelperThread::WhenCoreIdle : HelperThread::Off;
  if (share_schedules_)
    setup.lowered = [this, &point, &job](const schedules::LoweringTarget& t) { return lowered(point, job, t); };
  std::unique_ptr<const config::Scenario> scenario;
  try {
    scenario = std::make_unique<const config::Scenario>(setup);
  } catch (const schedules::JobError& e) { // the lowering: e.g. a stage that does not fit
    return infeasible(e.what());
  } catch (const config::ConfigError& e) { // e.g. FP8 GEMMs on a GPU without FP8
    return infeasible(e.what());
  } catch (const topology::TopologyError& e) { // placement on this fabric
    r.status = PointStatus::Failed;
    r.reason = e.what();
    return r;
  }
  for (const auto& prog : scenario->schedule().programs) r.ops += static_cast<int64_t>(prog.ops.size());
  r.mode = flow ? "flow" : "analytic";
  try {
    const sim::SimReport s = scenario->simulate();
    if (!s.completed) {
      r.status = PointStatus::Failed;
      r.reason = "did not complete: " + s.failure;
      return r;
    }
    store_iteration(s, r);
    if (spec_.evaluation == Evaluation::Campaign) run_campaign(point, job, cs.server.gpus, r);
  } catch (const schedules::ScheduleError& e) {
    r.status = PointStatus::Failed;
    r.reason = e.what();
  } catch (const sim::SimError& e) {
    r.status = PointStatus::Failed;
    r.reason = e.what();
  }
  return r;
}

std::shared_ptr<const config::ClusterFile> Evaluator::cluster_file(const std::string& name, int64_t point_id,
                                                                   const std::vector<config::KeyOverride>& edits,
                                                                   std::string& why_not) {
  std::string key = name;
  for (const auto& e : edits) key += "\n" + e.text;
  if (auto it = clusters_.find(key); it != clusters_.end()) return it->second;
  try { // the job's own cluster (not named by the study, so not read up front), or an edited one
    return clusters_[key] = std::make_shared<const config::ClusterFile>(config::load_cluster_file(name, edits));
  } catch (const config::ConfigError& e) {
    if (!edits.empty()) { // the point's catalogue model does not fit the file: the point's own
      why_not = e.what();
      return nullptr;
    }
    throw config::ConfigError(spec_.file + ": cluster of point " + std::to_string(point_id) + ": " + e.what());
  }
}

void Evaluator::run_campaign(const Point& point, const schedules::JobSpec& job, int64_t gpus_per_node,
                             PointResult& r) const {
  // As `twinscale campaign` (cli/fault_commands.cpp) with the simulated iteration time.
  const auto& in = *static_cast<const CampaignInputs*>(campaign_inputs_.get());
  faults::Campaign c;
  c.model = in.model;
  if (auto scale = real(point, "fault_rate_scale"))
    for (auto& cat : c.model.categories) cat.rate_per_gpu_hour *= *scale;
  c.recovery = in.recovery.policy;
  faults::CheckpointPolicy policy = in.recovery.checkpoint;
  if (auto interval = real(point, "checkpoint_interval_s")) policy.interval_s = *interval;
  c.checkpoint_interval_s = policy.interval_s;
  const faults::CheckpointState state = faults::checkpoint_state(job, gpus_per_node);
  c.checkpoint = faults::checkpoint_times(policy, state, in.recovery.policy.load_method);
  c.shape = state.shape;
  c.spec.duration_s = spec_.days * 86400.0;
  c.spec.iteration_time_s = r.iteration_time_s;
  c.spec.seeds = spec_.seeds;
  c.spec.seed = spec_.campaign_seed;
  try {
    const faults::CampaignSummary sum = faults::run_campaign(c);
    r.campaign = true;
    r.ettr = sum.ettr.mean;
    r.ettr_ci95 = sum.ettr.half_width;
    r.interruptions = sum.interruptions.mean;
    r.lost_work_s = sum.lost_work_s.mean;
  } catch (const faults::FaultError& e) { // e.g. an interval shorter than the checkpoint itself
    r.status = PointStatus::Infeasible;
    r.reason = std::string("campaign: ") + e.what();
  }
}

} // namespace twinscale::study
