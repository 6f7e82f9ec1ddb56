// The campaign engine: a discrete-event simulation of weeks of wall time of one training
// job under a fault model, a recovery policy and a checkpoint policy. Faults arrive per
// category (exponential or Weibull gaps, scaled to the job's GPUs) whatever the job is
// doing; the job moves through states (training, checkpoint stall, network stall,
// detection, diagnosis, replacement, restart/init, checkpoint load) and every interruption
// rolls the work back to the last durable checkpoint.
//
// Semantics (what the numbers mean):
//  - work: seconds of useful training progress; the job advances it at speed 1, or at
//    1 − slowdown while a straggler is active (the slowest one counts), 0 while a link
//    outage shorter than the retransmit limit stalls the flows (M13).
//  - a checkpoint starts each `checkpoint_interval_s` of work (rounded up to whole
//    iterations), blocks training for CheckpointTimes::blocking_s, then becomes durable
//    persist_s later; a failure in between loses it (recovery uses the previous one).
//  - an interruption: detection latency by signal (+ the retransmit limit for an outage
//    that outlasts it), diagnostics (finds a fault with probability diagnosable ×
//    (1 − false-negative rate); escalation after repeated misses always finds it; false
//    positives evict a healthy node too), replacement (warm spare or cold replacement, in
//    parallel per evicted node), restart + communicator init, checkpoint load. A missed
//    hardware fault stays in the cluster and strikes again after training resumes.
//  - silent data corruption (detection None): training goes on until detection.silent_s
//    later, then rolls back to the last checkpoint taken before the corruption.
//  - a fault during detection or diagnosis joins that diagnosis; one during replacement,
//    restart or load makes the recovery start over (its time counts to the same incident).
//  - time by state sums to the wall time. Work later rolled back is moved from
//    `training` to `replay` (so training = useful work and replay = lost work recomputed).
//    ETTR = training / wall time.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "faults/checkpoint_policy.hpp"
#include "faults/fault_model.hpp"
#include "faults/recovery_policy.hpp"
#include "faults/statistics.hpp"
#include "topology/placement.hpp"

namespace twinscale::faults {

enum class RunState : uint8_t {
  Training,        // useful work
  CheckpointStall, // stage 1 of checkpoints (blocking copy to host)
  NetworkStall,    // flows paused by a link outage shorter than the retransmit limit
  Slowdown,        // time lost to stragglers: (1 − speed) of the time they are active
  Detection,       // fault happened, not yet noticed
  Diagnosis,       // diagnostics (or manual investigation) running
  Replacement,     // waiting for spare / replacement nodes
  RestartInit,     // process restart + communicator initialisation (incl. the first start)
  CheckpointLoad,  // reading the checkpoint back
  Replay,          // work computed, then lost by a rollback (recomputed later as training)
};
inline constexpr size_t kRunStates = 10;
const char* to_string(RunState s);

/// A fault at a given time (scripted campaigns: tests, replaying a real incident log).
struct ScriptedFault {
  double at_s = 0;
  size_t category = 0; // index into FaultModel::categories
};

struct CampaignSpec {
  double duration_s = 28 * 86400.0; // wall time simulated per seed
  double iteration_time_s = 1;      // from the simulator (or --iteration-time)
  int64_t seeds = 1;                // independent runs; seeds seed, seed + 1, …
  uint64_t seed = 1;
  /// When non-empty, faults arrive exactly at these times instead of being drawn (durations
  /// of outages and slowdowns are still drawn, deterministic when Fixed).
  std::vector<ScriptedFault> scripted_faults;
};

struct Campaign {
  FaultModel model;
  RecoveryPolicy recovery;
  double checkpoint_interval_s = 3600; // work between checkpoints (Daly's τ)
  CheckpointTimes checkpoint;          // from checkpoint_times()
  topology::JobShape shape;            // GPUs = tp·dp·pp scale the model and the comm init
  CampaignSpec spec;
  /// Optional: called after each seed with (seeds done, seeds in all), for progress.
  std::function<void(int64_t, int64_t)> on_seed_done;
};

/// One seed's run.
struct CampaignRun {
  uint64_t seed = 0;
  std::array<double, kRunStates> time_by_state_s{};
  std::vector<int64_t> interruptions_by_category; // incidents started by a fault of each category
  std::vector<int64_t> faults_by_category;        // every fault drawn, interrupting or not
  int64_t interruptions = 0;                      // incidents (the job stopped and was recovered)
  int64_t repeat_interruptions = 0;               // of which: a missed fault striking again
  int64_t failed_recoveries = 0;                  // a fault during replacement/restart/load
  int64_t stalls = 0;                             // link outages the job survived (M13)
  double lost_work_s = 0;                         // work rolled back
  int64_t checkpoints_durable = 0;
  int64_t checkpoints_lost = 0;   // failure before stage 2 finished
  int64_t evictions = 0;          // nodes evicted (faulty or not)
  int64_t false_evictions = 0;    // healthy nodes evicted (false positives)
  int64_t missed_diagnoses = 0;   // faults diagnostics did not find
  int64_t cold_replacements = 0;  // evictions that found no warm spare
  std::vector<double> recovery_s; // per incident: fault → training resumes

  double wall_s() const;
  double ettr() const { return time_by_state_s[0] / wall_s(); }
};

struct CampaignSummary {
  double comm_init_s = 0;           // per restart
  double restart_total_s = 0;       // restart_s + comm_init_s
  double interrupt_mtbf_s = 0;      // of the fault model at this size (Interrupt categories)
  double checkpoint_interval_s = 0; // after rounding to whole iterations
  std::vector<CampaignRun> runs;
  MeanCi ettr;
  std::array<MeanCi, kRunStates> time_by_state_s;
  std::vector<MeanCi> interruptions_by_category;
  MeanCi interruptions;
  MeanCi lost_work_s;
  MeanCi checkpoints_lost;
  double recovery_median_s = 0; // over all incidents of all seeds
  double recovery_p99_s = 0;
};

/// Validates the model, the policy and the checkpoint (interval ≥ checkpoint time), then
/// runs spec.seeds seeds. Throws FaultError for invalid inputs.
CampaignSummary run_campaign(const Campaign& campaign);

/// One seed (no validation; run_campaign calls it). Deterministic in (campaign, seed).
CampaignRun run_campaign_seed(const Campaign& campaign, uint64_t seed);

} // namespace twinscale::faults
