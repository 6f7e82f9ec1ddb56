#include "config/scenario.hpp"

#include <utility>

#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "config/fault_file.hpp"
#include "config/hardware_catalogue.hpp"
#include "faults/fabric_targets.hpp"
#include "schedules/error.hpp"
#include "sim/estimate.hpp"

namespace twinscale::config {

namespace {

template <class E, size_t N>
E parse_name(const EnumNames<E, N>& names, std::string_view text, std::string_view what, std::string_view kind) {
  if (const auto value = enum_from_name(names, text)) return *value;
  throw ConfigError(std::string(what) + " '" + std::string(text) + "': valid " + std::string(kind) + " are " +
                    enum_names_list(names));
}

/// The cluster's name: the spec's, the job's, or the name inside a cluster already read.
std::string cluster_name_of(const ScenarioSpec& spec) {
  if (!spec.cluster.empty()) return spec.cluster;
  if (!spec.job.cluster.empty()) return spec.job.cluster;
  return spec.cluster_file ? spec.cluster_file->cluster.name : std::string();
}

/// Refuses a job that needs a figure its cluster's GPU lacks, before anything runs, naming
/// the catalogue's GPUs that `has` it and what the user can do instead.
template <class Has>
[[noreturn]] void refuse_gpu(const std::string& who, const std::string& cluster, const topology::GpuSpec& gpu, Has has,
                             const std::string& needs, const std::string& lacks, const std::string& with,
                             const std::string& remedy) {
  std::string valid;
  for (const auto& [model, entry] : hardware_catalogue().gpus)
    if (has(entry)) valid += (valid.empty() ? "" : ", ") + model;
  throw ConfigError(who + ": " + needs + ", but cluster '" + cluster + "' has GPU " + gpu.model + ", " + lacks + "; " +
                    with + ": " + valid + " (" + remedy + ")");
}

/// The cluster the scenario runs on (read once, [network] included), sized for the job;
/// `described_gpus` gets the size the file itself gives.
ClusterFile resolve_cluster(const ScenarioSpec& spec, const std::string& name, int64_t& described_gpus) {
  const std::string who = spec.job_source.empty() ? "job '" + spec.job.name + "'" : spec.job_source;
  if (name.empty()) throw ConfigError(who + ": no cluster (give --cluster NAME|FILE or `cluster` in the job)");
  ClusterFile file = spec.cluster_file ? *spec.cluster_file : load_cluster_file(name, spec.cluster_edits);
  topology::ClusterSpec& cluster = file.cluster;
  described_gpus = cluster.gpus;
  cluster.gpus = spec.job.parallel.gpus();
  const auto has_fp8 = [](const topology::GpuSpec& g) { return g.fp8_peak_flops > 0; };
  if (spec.job.options.fp8() && !has_fp8(cluster.gpu))
    refuse_gpu(who, name, cluster.gpu, has_fp8, "precision.gemm = \"fp8\" needs FP8 tensor cores", "which has none",
               "GPUs with FP8", "or set precision.gemm = \"bf16\"");
  const auto& ops = spec.job.options.operators;
  const auto has_cudnn = [](const topology::GpuSpec& g) { return g.kernels.cudnn.given(); };
  if (ops.flash_attention && ops.attention_backend == schedules::AttentionBackend::Cudnn && !has_cudnn(cluster.gpu))
    refuse_gpu(who, name, cluster.gpu, has_cudnn,
               "schedule.operators.attention_backend = \"cudnn\" needs cuDNN's attention rates "
               "(cudnn_attention_fwd_efficiency, cudnn_attention_bwd_efficiency)",
               "whose catalogue entry has none", "GPUs with them",
               "or set attention_backend = \"flash-attn-2\", or give both in the cluster's [gpu] table");
  return file;
}

std::shared_ptr<const topology::Fabric> fabric_for(const ScenarioSpec& spec, const topology::ClusterSpec& cluster) {
  if (!spec.fabric) return std::make_shared<const topology::Fabric>(cluster);
  TWINSCALE_ASSERT(spec.fabric->gpus() == cluster.gpus, "ScenarioSpec::fabric is not built for the job's GPUs");
  return spec.fabric;
}

} // namespace

schedules::LoweringTarget lowering_target(const topology::ClusterSpec& cluster, std::optional<double> gpu_memory_bytes,
                                          bool check_memory) {
  schedules::LoweringTarget target;
  target.check_memory = check_memory;
  if (gpu_memory_bytes) {
    if (!(*gpu_memory_bytes > 0)) throw ConfigError("--gpu-memory-gb must be > 0");
    target.gpu_memory_bytes = *gpu_memory_bytes;
  } else if (const GpuMemoryLimit limit = tightest_gpu_memory(cluster); limit.bytes > 0) {
    target.gpu_memory_bytes = limit.bytes;
    if (!cluster.gpu_groups.empty()) target.gpu_memory_holder = limit.holder;
  }
  return target;
}

sim::SimOptions cluster_sim_options(const ClusterFile& cluster, sim::SimOptions base, uint64_t seed) {
  base.seed = seed;
  base.network = cluster.network;
  return base;
}

schedules::Schedule lower_for_real_run(const schedules::JobSpec& job) {
  schedules::LoweringTarget target;
  target.check_memory = false;
  return schedules::lower(job, target);
}

topology::PlacementPolicy parse_placement(std::string_view text, std::string_view what) {
  return parse_name(topology::kPlacementPolicyNames, text, what, "placements");
}
std::string_view placement_name(topology::PlacementPolicy policy) {
  return enum_name(topology::kPlacementPolicyNames, policy);
}
const std::vector<std::string>& placement_names() {
  static const std::vector<std::string> names = enum_names_vector(topology::kPlacementPolicyNames);
  return names;
}
sim::SimMode parse_sim_mode(std::string_view text, std::string_view what) {
  return parse_name(sim::kSimModeNames, text, what, "modes");
}
const std::vector<std::string>& sim_mode_names() {
  static const std::vector<std::string> names = enum_names_vector(sim::kSimModeNames);
  return names;
}
sim::CollectiveAlgorithm parse_all_reduce_algorithm(std::string_view text, std::string_view what) {
  return parse_name(sim::kCollectiveAlgorithmNames, text, what, "algorithms");
}
const std::vector<std::string>& all_reduce_algorithm_names() {
  static const std::vector<std::string> names = enum_names_vector(sim::kCollectiveAlgorithmNames);
  return names;
}

namespace {
/// The scenario's schedule: ScenarioSpec::lowered's when given, else lowered here.
std::shared_ptr<const schedules::Schedule> lower_for(const ScenarioSpec& spec, schedules::LoweringTarget target) {
  target.helper_thread = spec.sim.helper_thread; // as the executor's set-up
  if (spec.lowered) return spec.lowered(target);
  return std::make_shared<const schedules::Schedule>(schedules::lower(spec.job, target));
}
} // namespace

Scenario::Resolved Scenario::resolve(const ScenarioSpec& spec) {
  Resolved r;
  r.name = cluster_name_of(spec);
  r.file = resolve_cluster(spec, r.name, r.described_gpus);
  return r;
}

Scenario::Scenario(const ScenarioSpec& spec) : Scenario(spec, resolve(spec)) {}

Scenario::Scenario(const ScenarioSpec& spec, Resolved&& resolved)
    : cluster_name_(std::move(resolved.name)), described_gpus_(resolved.described_gpus),
      cluster_(std::move(resolved.file.cluster)), fabric_(fabric_for(spec, cluster_)),
      schedule_(lower_for(spec, lowering_target(cluster_, spec.gpu_memory_bytes, spec.check_memory))),
      placement_(spec.placement),
      gpu_of_rank_(topology::place(*fabric_, {schedule_->layout.tp, schedule_->layout.dp, schedule_->layout.pp},
                                   spec.placement, spec.seed)),
      options_(cluster_sim_options(resolved.file, spec.sim, spec.seed)) {
  options_.calibration = nullptr;
  options_.faults = nullptr;
  if (!spec.calibration_file.empty()) {
    calibration_ = schedules::read_calibration_file(spec.calibration_file);
    options_.calibration = &calibration_;
  }
  if (!spec.faults_file.empty()) {
    faults_ = load_fault_plan(spec.faults_file);
    check_fault_plan(faults_, faults::FabricTargets(*fabric_), spec.faults_file);
    options_.faults = &faults_;
  }
}

void Scenario::record_trace(std::vector<int64_t> ranks) {
  options_.record_trace = true;
  options_.trace_ranks = std::move(ranks);
}

void Scenario::check_fits() const {
  sim::check_simulation_fits(schedule_->job, options_.mode,
                             options_.aggregate && !options_.every_rank && options_.gpu_speed.empty());
}

sim::SimReport Scenario::simulate() const {
  check_fits();
  return sim::simulate(*schedule_, *fabric_, gpu_of_rank_, options_);
}

} // namespace twinscale::config
