// A statistical fault model: categories of faults, each with a rate, a duration, a
// scope, the signal by which it is detected and whether diagnostics find it. Rates are
// per GPU-hour (or per node-day in files) and scale linearly with the cluster size: a
// cluster of N GPUs sees N · rate_per_gpu_hour faults of a category per hour.
//
// Parsed from TOML by config/fault_file.cpp; presets in presets/faults/ cite their sources.
// Consumed by the campaign engine (faults/campaign.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/enum_names.hpp"

namespace twinscale::faults {

enum class FaultCategory : uint8_t {
  Gpu,                  // faulty GPU (incl. NVLink errors)
  Hbm,                  // GPU HBM memory
  GpuSram,              // GPU SRAM (register file, caches)
  GpuSystemProcessor,   // GSP firmware/processor
  GpuThermal,           // GPU thermal interface + sensor
  Nic,                  // NIC
  SwitchCable,          // network switch or cable
  Host,                 // host: unplanned maintenance, CPU, DRAM, SSD, PSU, chassis…
  SoftwareBug,          // software bug or dependency (no hardware to evict)
  NcclWatchdog,         // NCCL watchdog timeout, cause unknown
  SilentDataCorruption, // wrong results, no error raised
  LinkFlap,             // link down for seconds, then back (transient)
  Straggler,            // a GPU/node computing slower for a while (not an interruption)
  Other,
};

/// How the failure becomes visible to the training driver (M14).
enum class DetectionSignal : uint8_t {
  ExplicitError,   // an error in the logs / process exit (CUDA Xid, NCCL error)
  MissedHeartbeat, // the executor's daemon stops reporting
  TrafficDrop,     // RDMA traffic of the job declines / stops (a hang)
  None,            // nothing: silent (data corruption) or not an interruption (straggler)
};

/// What fails: decides what diagnostics look at and what is evicted.
enum class FaultScope : uint8_t { Gpu, Node, Nic, Link, Switch, Software };

/// What the fault does to the job.
enum class FaultEffect : uint8_t {
  Interrupt, // the job stops and must be recovered from a checkpoint
  Outage,    // a link outage: stalls the job if shorter than the retransmit limit (M13),
             // interrupts it otherwise
  Slowdown,  // the job runs at (1 − slowdown) speed for the fault's duration
};

enum class InterArrival : uint8_t {
  Exponential, // memoryless (Poisson process per category)
  Weibull,     // renewal process with Weibull(shape k) gaps, same mean as the rate says
};

enum class DurationDistribution : uint8_t { Fixed, Exponential };

// The names fault model files use for these enums (config/fault_file.cpp reads them,
// to_string prints them).
inline constexpr EnumNames<FaultCategory, 14> kFaultCategoryNames{
    {{"gpu", FaultCategory::Gpu},
     {"hbm", FaultCategory::Hbm},
     {"gpu-sram", FaultCategory::GpuSram},
     {"gpu-system-processor", FaultCategory::GpuSystemProcessor},
     {"gpu-thermal", FaultCategory::GpuThermal},
     {"nic", FaultCategory::Nic},
     {"switch-cable", FaultCategory::SwitchCable},
     {"host", FaultCategory::Host},
     {"software-bug", FaultCategory::SoftwareBug},
     {"nccl-watchdog", FaultCategory::NcclWatchdog},
     {"silent-data-corruption", FaultCategory::SilentDataCorruption},
     {"link-flap", FaultCategory::LinkFlap},
     {"straggler", FaultCategory::Straggler},
     {"other", FaultCategory::Other}}};
inline constexpr EnumNames<DetectionSignal, 4> kDetectionSignalNames{
    {{"explicit-error", DetectionSignal::ExplicitError},
     {"missed-heartbeat", DetectionSignal::MissedHeartbeat},
     {"traffic-drop", DetectionSignal::TrafficDrop},
     {"none", DetectionSignal::None}}};
inline constexpr EnumNames<FaultScope, 6> kFaultScopeNames{{{"gpu", FaultScope::Gpu},
                                                            {"node", FaultScope::Node},
                                                            {"nic", FaultScope::Nic},
                                                            {"link", FaultScope::Link},
                                                            {"switch", FaultScope::Switch},
                                                            {"software", FaultScope::Software}}};
inline constexpr EnumNames<FaultEffect, 3> kFaultEffectNames{
    {{"interrupt", FaultEffect::Interrupt}, {"outage", FaultEffect::Outage}, {"slowdown", FaultEffect::Slowdown}}};
inline constexpr EnumNames<InterArrival, 2> kInterArrivalNames{
    {{"exponential", InterArrival::Exponential}, {"weibull", InterArrival::Weibull}}};
inline constexpr EnumNames<DurationDistribution, 2> kDurationDistributionNames{
    {{"fixed", DurationDistribution::Fixed}, {"exponential", DurationDistribution::Exponential}}};

struct FaultCategorySpec {
  FaultCategory category = FaultCategory::Other;
  std::string name;             // as in the source table ("Faulty GPU")
  double rate_per_gpu_hour = 0; // > 0
  FaultScope scope = FaultScope::Gpu;
  FaultEffect effect = FaultEffect::Interrupt;
  DetectionSignal detection = DetectionSignal::ExplicitError;
  /// Hardware stays faulty until evicted: restarting on it makes the job fail again.
  bool needs_eviction = true;
  /// Probability that a diagnostics round finds this fault when it is there, before the
  /// policy's false-negative rate is applied (0 for faults diagnostics cannot see).
  double diagnosable = 1.0;
  /// Outage: the link's outage; Slowdown: how long the slowdown lasts. Interrupt: unused.
  double duration_s = 0;
  DurationDistribution duration_distribution = DurationDistribution::Fixed;
  double slowdown = 0; // Slowdown only: fraction of speed lost, in (0, 1)
};

struct FaultModel {
  std::string name;
  std::string source; // citation, copied into results
  InterArrival inter_arrival = InterArrival::Exponential;
  double weibull_shape = 1.0; // k, for InterArrival::Weibull (k < 1: infant mortality)
  int64_t gpus_per_node = 8;  // converts per-node-day rates
  std::vector<FaultCategorySpec> categories;

  /// Faults of category `i` per hour on a cluster of `gpus` GPUs.
  double cluster_rate_per_hour(size_t i, int64_t gpus) const {
    return categories[i].rate_per_gpu_hour * static_cast<double>(gpus);
  }
  /// Sum over the categories whose effect is Interrupt (outages excluded: whether they
  /// interrupt depends on the retransmit policy).
  double interrupt_rate_per_hour(int64_t gpus) const;
  /// Mean time between interruptions (Interrupt categories) in seconds.
  double interrupt_mtbf_s(int64_t gpus) const { return 3600.0 / interrupt_rate_per_hour(gpus); }
};

/// per node-day → per GPU-hour
inline double per_gpu_hour_from_node_day(double rate_per_node_day, int64_t gpus_per_node) {
  return rate_per_node_day / (24.0 * static_cast<double>(gpus_per_node));
}

/// Checks rates > 0, probabilities in [0, 1], durations and slowdowns consistent with the
/// effect, Weibull shape > 0, at least one category. Throws FaultError naming the model,
/// the category and the field.
void validate_model(const FaultModel& model);

/// A single-category model: interrupts with exponential gaps of mean `mtbf_s` on a
/// cluster of `gpus` GPUs, detected by an explicit error, no eviction needed (the
/// textbook failure model Young's and Daly's formulas assume).
FaultModel exponential_model(double mtbf_s, int64_t gpus);

const char* to_string(FaultCategory c);
const char* to_string(DetectionSignal s);
const char* to_string(FaultScope s);
const char* to_string(FaultEffect e);
const char* to_string(InterArrival a);

} // namespace twinscale::faults
