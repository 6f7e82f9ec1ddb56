// One scenario step: the setup every command, bench, sweep point and experiment shares
// between "a job and a cluster" and "a simulator run" — read the cluster file once (its
// [network] table included), build its fabric for the job's GPUs, lower the job against
// the cluster's tightest GPU memory ([gpu] and every [[gpu_groups]] model), place the
// ranks, read the calibration table and the fault plan (checked against the fabric) and
// fill the simulator's options. The command-line names of the simulator mode and the
// all-reduce algorithm are parsed here. What simulates something other than one job on
// its cluster (`collective`, `simulate-jobs`) reads the cluster file once and takes its
// simulator options from cluster_sim_options, as Scenario does; the real-run commands
// (`run`, `probe`, `calibrate`) read no cluster and lower with lower_for_real_run.
//
//   config::ScenarioSpec spec;
//   spec.job = config::load_job_preset("tiny-megascale");
//   spec.placement = config::parse_placement("tor-aware", "--placement");
//   const config::Scenario scenario(spec);
//   const sim::SimReport r = scenario.simulate();
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/cluster_file.hpp"
#include "config/key_overrides.hpp"
#include "faults/fault_plan.hpp"
#include "schedules/calibration.hpp"
#include "schedules/job.hpp"
#include "schedules/schedule.hpp"
#include "sim/simulate.hpp"
#include "topology/cluster.hpp"
#include "topology/fabric.hpp"
#include "topology/placement.hpp"

namespace twinscale::config {

// Names ↔ enums. parse_* throw ConfigError naming `what` (the option or key the text came
// from) and listing the valid names; *_names() give those names in order (CLI checks).
topology::PlacementPolicy parse_placement(std::string_view text, std::string_view what);
std::string_view placement_name(topology::PlacementPolicy policy);
const std::vector<std::string>& placement_names(); // linear, tor-aware, random
sim::SimMode parse_sim_mode(std::string_view text, std::string_view what);
const std::vector<std::string>& sim_mode_names(); // flow, analytic
sim::CollectiveAlgorithm parse_all_reduce_algorithm(std::string_view text, std::string_view what);
const std::vector<std::string>& all_reduce_algorithm_names(); // ring, tree

/// What the lowering of `job` checks memory against on `cluster`: `gpu_memory_bytes` when
/// given (throws ConfigError unless > 0), else the tightest of the cluster's GPU models
/// (config::tightest_gpu_memory); no limit when no model gives a size.
schedules::LoweringTarget lowering_target(const topology::ClusterSpec& cluster,
                                          std::optional<double> gpu_memory_bytes = std::nullopt,
                                          bool check_memory = true);

/// The simulator options a cluster file implies over `base` (the command's mode, algorithm,
/// channels…): the file's [network] congestion control and PFC, and `seed` (ECMP hashing,
/// random placement). Scenario fills its options with it; a run that is not one job's
/// iteration on its own fabric (`collective`: one collective; `simulate-jobs`: several jobs
/// on one fabric) calls it on the cluster file it read once, so that it simulates what
/// `simulate` does on that cluster.
sim::SimOptions cluster_sim_options(const ClusterFile& cluster, sim::SimOptions base, uint64_t seed);

/// The schedule a real run (`run`, `probe`, `calibrate`) executes for `job`: no cluster is
/// read (the machine is the one the run is on) and memory is not checked (the CPU device
/// runs scaled shapes). Throws JobError as schedules::lower does.
schedules::Schedule lower_for_real_run(const schedules::JobSpec& job);

/// What a scenario is made of. Plain values: a command fills it from its options.
struct ScenarioSpec {
  schedules::JobSpec job; // overrides (--gpus, --global-batch) applied
  std::string job_source; // "preset NAME" or the file, for messages
  std::string cluster;    // preset name or file; empty: the job's cluster
  /// The cluster already read (a sweep reads each file once and varies it per point);
  /// null: `cluster` (or the job's) is read. Its `gpus` is set to the job's either way.
  std::shared_ptr<const ClusterFile> cluster_file;
  /// The fabric of exactly that cluster for the job's GPUs (a sweep's cache); null: built.
  std::shared_ptr<const topology::Fabric> fabric;
  /// When set, gives the schedule of `job` lowered against the target it is passed
  /// (a sweep's cache: points that differ only in what lowering does not read share one),
  /// called where the lowering would run; it must return exactly what schedules::lower
  /// gives and throw what it throws. Empty: `job` is lowered here.
  std::function<std::shared_ptr<const schedules::Schedule>(const schedules::LoweringTarget&)> lowered;
  std::vector<KeyOverride> cluster_edits; // --set cluster.KEY=VALUE, made to the cluster's TOML
  std::optional<double> gpu_memory_bytes; // memory check; default: the cluster's GPU
  bool check_memory = true;               // false: memory is estimated, not enforced
  topology::PlacementPolicy placement = topology::PlacementPolicy::Linear;
  uint64_t seed = 1;            // ECMP hashing and random placement
  sim::SimOptions sim;          // mode, algorithm, channels, aggregation…; its
                                // seed, calibration and faults are set from here
  std::string calibration_file; // JSON calibration table (empty: device model)
  std::string faults_file;      // TOML fault plan (empty: none)
};

/// A resolved scenario: everything sim::simulate needs, owned in one place (the options
/// point at the calibration table and fault plan held here, so a Scenario neither copies
/// nor moves). Throws ConfigError (no cluster, bad file), TopologyError (the cluster
/// cannot be built or the job does not fit it), JobError (the job cannot be lowered).
class Scenario {
public:
  explicit Scenario(const ScenarioSpec& spec);
  Scenario(const Scenario&) = delete;
  Scenario& operator=(const Scenario&) = delete;

  const std::string& cluster_name() const { return cluster_name_; }
  const topology::ClusterSpec& cluster() const { return cluster_; }
  /// The GPUs the cluster file itself describes (its `gpus`, edits applied; 0: it gives
  /// none); cluster().gpus is the job's, which the fabric is built for.
  int64_t described_gpus() const { return described_gpus_; }
  const topology::Fabric& fabric() const { return *fabric_; }
  const schedules::Schedule& schedule() const { return *schedule_; }
  const std::vector<int64_t>& gpu_of_rank() const { return gpu_of_rank_; }
  topology::PlacementPolicy placement() const { return placement_; }
  const sim::SimOptions& options() const { return options_; }

  /// Switches the simulator mode (e.g. a benchmark timing both on one setup).
  /// Refuses (sim::check_simulation_fits: one line with the estimate and how to proceed)
  /// a simulation that would not fit in this machine's memory; simulate() calls it too.
  void check_fits() const;
  void set_mode(sim::SimMode mode) { options_.mode = mode; }
  /// Per-GPU compute speed factors (indexed by fabric GPU; see SimOptions::gpu_speed).
  void set_gpu_speed(std::vector<double> speed) { options_.gpu_speed = std::move(speed); }
  /// Rank `rank` stops issuing ops at simulated time `at_s` (SimOptions::hang_rank).
  void set_hang(int64_t rank, double at_s) {
    options_.hang_rank = rank;
    options_.hang_at_s = at_s;
  }
  /// Records a trace of `ranks` (empty: every executed rank) in the next simulate().
  void record_trace(std::vector<int64_t> ranks);
  /// Streams every executed rank's op events into the `.tstrace` file `path` during the run.
  void stream_binary_trace(std::string path) { options_.binary_trace = std::move(path); }
  sim::SimReport simulate() const;

private:
  struct Resolved { // the cluster's name and file, read once
    std::string name;
    ClusterFile file;           // sized for the job
    int64_t described_gpus = 0; // the file's own `gpus`
  };
  static Resolved resolve(const ScenarioSpec& spec);
  Scenario(const ScenarioSpec& spec, Resolved&& resolved);

  std::string cluster_name_;
  int64_t described_gpus_ = 0;
  topology::ClusterSpec cluster_;
  std::shared_ptr<const topology::Fabric> fabric_;
  std::shared_ptr<const schedules::Schedule> schedule_; // never null
  topology::PlacementPolicy placement_;
  std::vector<int64_t> gpu_of_rank_;
  schedules::CalibrationTable calibration_;
  faults::FaultPlan faults_;
  sim::SimOptions options_;
};

} // namespace twinscale::config
