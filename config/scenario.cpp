#include "config/scenario.hpp"

#include <array>
#include <utility>

#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "config/fault_file.hpp"
#include "config/hardware_catalogue.hpp"
#include "faults/fabric_targets.hpp"
#include "sim/estimate.hpp"

namespace twinscale::config {

namespace {

template <typename Enum, size_t N>
using NameTable = std::array<std::pair<std::string_view, Enum>, N>;

constexpr NameTable<topology::PlacementPolicy, 3> kPlacements{{
    {"linear", topology::PlacementPolicy::Linear},
    {"tor-aware", topology::PlacementPolicy::TorAware},
    {"random", topology::PlacementPolicy::Random},
}};
constexpr NameTable<sim::SimMode, 2> kSimModes{{{"flow", sim::SimMode::Flow}, {"analytic", sim::SimMode::Analytic}}};
constexpr NameTable<sim::CollectiveAlgorithm, 2> kAlgorithms{{
    {"ring", sim::CollectiveAlgorithm::Ring},
    {"tree", sim::CollectiveAlgorithm::Tree},
}};

template <typename Enum, size_t N>
Enum parse_name(const NameTable<Enum, N>& table, std::string_view text, std::string_view what, std::string_view kind) {
  std::string valid;
  for (const auto& [name, value] : table) {
    if (name == text) return value;
    valid += (valid.empty() ? "" : ", ") + std::string(name);
  }
  throw ConfigError(std::string(what) + " '" + std::string(text) + "': valid " + std::string(kind) + " are " + valid);
}

template <typename Enum, size_t N>
std::vector<std::string> names_of(const NameTable<Enum, N>& table) {
  std::vector<std::string> out;
  for (const auto& entry : table) out.emplace_back(entry.first);
  return out;
}

/// The cluster the scenario runs on, its fabric built for the job's GPUs.
topology::ClusterSpec resolve_cluster(const ScenarioSpec& spec, std::string& name) {
  name = spec.cluster.empty() ? spec.job.cluster : spec.cluster;
  if (name.empty()) {
    const std::string who = spec.job_source.empty() ? "job '" + spec.job.name + "'" : spec.job_source;
    throw ConfigError(who + ": no cluster (give --cluster NAME|FILE or `cluster` in the job)");
  }
  topology::ClusterSpec cluster = load_cluster(name, spec.cluster_edits);
  cluster.gpus = spec.job.parallel.gpus();
  if (spec.job.options.fp8() && !(cluster.gpu.fp8_peak_flops > 0)) {
    std::string valid;
    for (const auto& [model, gpu] : hardware_catalogue().gpus)
      if (gpu.fp8_peak_flops > 0) valid += (valid.empty() ? "" : ", ") + model;
    const std::string who = spec.job_source.empty() ? "job '" + spec.job.name + "'" : spec.job_source;
    throw ConfigError(who + ": precision.gemm = \"fp8\" needs FP8 tensor cores, but cluster '" + name + "' has GPU " +
                      cluster.gpu.model + ", which has none; GPUs with FP8: " + valid +
                      " (or set precision.gemm = \"bf16\")");
  }
  return cluster;
}

schedules::Schedule lower_for(const ScenarioSpec& spec, const topology::ClusterSpec& cluster) {
  schedules::LoweringTarget target;
  if (spec.gpu_memory_bytes) {
    if (!(*spec.gpu_memory_bytes > 0)) throw ConfigError("--gpu-memory-gb must be > 0");
    target.gpu_memory_bytes = *spec.gpu_memory_bytes;
  } else if (const GpuMemoryLimit limit = tightest_gpu_memory(cluster); limit.bytes > 0) {
    target.gpu_memory_bytes = limit.bytes;
    if (!cluster.gpu_groups.empty()) target.gpu_memory_holder = limit.holder;
  }
  return schedules::lower(spec.job, target);
}

} // namespace

topology::PlacementPolicy parse_placement(std::string_view text, std::string_view what) {
  return parse_name(kPlacements, text, what, "placements");
}
std::string_view placement_name(topology::PlacementPolicy policy) {
  for (const auto& [name, value] : kPlacements)
    if (value == policy) return name;
  return "?";
}
const std::vector<std::string>& placement_names() {
  static const std::vector<std::string> names = names_of(kPlacements);
  return names;
}
sim::SimMode parse_sim_mode(std::string_view text, std::string_view what) {
  return parse_name(kSimModes, text, what, "modes");
}
const std::vector<std::string>& sim_mode_names() {
  static const std::vector<std::string> names = names_of(kSimModes);
  return names;
}
sim::CollectiveAlgorithm parse_all_reduce_algorithm(std::string_view text, std::string_view what) {
  return parse_name(kAlgorithms, text, what, "algorithms");
}
const std::vector<std::string>& all_reduce_algorithm_names() {
  static const std::vector<std::string> names = names_of(kAlgorithms);
  return names;
}

Scenario::Scenario(const ScenarioSpec& spec)
    : cluster_(resolve_cluster(spec, cluster_name_)), fabric_(cluster_), schedule_(lower_for(spec, cluster_)),
      placement_(spec.placement),
      gpu_of_rank_(topology::place(fabric_, {schedule_.layout.tp, schedule_.layout.dp, schedule_.layout.pp},
                                   spec.placement, spec.seed)),
      options_(spec.sim) {
  options_.seed = spec.seed;
  options_.network = load_cluster_network(cluster_name_, spec.cluster_edits);
  options_.calibration = nullptr;
  options_.faults = nullptr;
  if (!spec.calibration_file.empty()) {
    calibration_ = schedules::read_calibration_file(spec.calibration_file);
    options_.calibration = &calibration_;
  }
  if (!spec.faults_file.empty()) {
    faults_ = load_fault_plan(spec.faults_file);
    check_fault_plan(faults_, faults::FabricTargets(fabric_), spec.faults_file);
    options_.faults = &faults_;
  }
}

void Scenario::record_trace(std::vector<int64_t> ranks) {
  options_.record_trace = true;
  options_.trace_ranks = std::move(ranks);
}

void Scenario::check_fits() const {
  sim::check_simulation_fits(schedule_.job, options_.mode,
                             options_.aggregate && !options_.every_rank && options_.gpu_speed.empty());
}

sim::SimReport Scenario::simulate() const {
  check_fits();
  return sim::simulate(schedule_, fabric_, gpu_of_rank_, options_);
}

} // namespace twinscale::config
