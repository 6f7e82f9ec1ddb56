// A recovery policy made of measurable parts (M9, M13–M16): how long a failure takes to
// be noticed (by its detection signal), diagnosed (with false negatives and positives),
// evicted and replaced (warm spares or not), how long the restart and the communicator
// initialisation take (as a function of N and the store/barrier method), and how the
// checkpoint is loaded (every rank reads, or one reader per DP group then broadcast).
//
// Parsed from TOML by config/recovery_file.cpp (presets: presets/recovery/).
#pragma once

#include <cstdint>
#include <string>

#include "common/enum_names.hpp"
#include "faults/fault_model.hpp"
#include "faults/fault_plan.hpp"
#include "topology/placement.hpp"

namespace twinscale::faults {

/// Time from a fault to the moment the driver acts on it, per detection signal (M14).
struct DetectionPolicy {
  double explicit_error_s = 30;   // error in logs / process exit → driver notified
  double heartbeat_period_s = 10; // executor daemon heartbeat period
  int64_t heartbeat_misses = 3;   // misses before a node is declared lost
  double traffic_window_s = 60;   // RDMA traffic stopped this long → declared a hang
  double silent_s = 3600;         // silent corruption: until noticed (loss spike, checks)

  /// Seconds from the fault to detection for `signal` (None → silent_s).
  double latency_s(DetectionSignal signal) const;
};

/// Diagnostics on suspect nodes (M15): loopback, NIC-to-NIC, intra-node all-to-all,
/// inter-node all-reduce with ToR neighbours.
struct DiagnosticsPolicy {
  double duration_s = 300;           // one diagnostics round
  double false_negative_rate = 0.05; // P(a diagnosable fault is missed)
  double false_positive_rate = 0.01; // P(a round also evicts a healthy node)
  int64_t escalate_after = 2;        // misses of one fault before humans investigate
  double escalation_s = 3600;        // manual investigation, always finds the fault
  /// A missed hardware fault strikes again this long after training resumes on it.
  double missed_fault_recurrence_s = 120;
};

/// Eviction and replacement of faulty nodes.
struct ReplacementPolicy {
  int64_t warm_spares = 0;          // idle nodes ready to take a job's place
  double spare_swap_s = 60;         // evict + bring a warm spare in
  double cold_replacement_s = 3600; // no spare left: wait for a node to be provisioned
  double repair_s = 3 * 86400.0;    // an evicted node returns to the spare pool
};

/// Communicator-group initialisation (M9). The store serialises its operations; with a
/// global barrier after each group's creation every rank touches the store once per group
/// (O(N²) operations in all); with local barriers and an O(N) ordering only the members of
/// a group do (O(N)).
enum class CommInitMethod : uint8_t {
  GlobalBarrierPerGroup, // torch.distributed new_group() + barrier: baseline
  LocalBarrier,          // MegaScale: non-blocking store, local barriers only
};
inline constexpr EnumNames<CommInitMethod, 2> kCommInitMethodNames{
    {{"global-barrier", CommInitMethod::GlobalBarrierPerGroup}, {"local-barrier", CommInitMethod::LocalBarrier}}};

struct CommInitPolicy {
  CommInitMethod method = CommInitMethod::LocalBarrier;
  double store_op_s = 0.304e-3; // one store operation (set/get/add/wait) at the server
};

/// Store operations to create the world, TP, PP and DP groups of `shape`.
double comm_init_store_ops(CommInitMethod method, const topology::JobShape& shape);
/// comm_init_store_ops × store_op_s.
double comm_init_s(const CommInitPolicy& policy, const topology::JobShape& shape);

/// The per-operation cost that makes comm_init_s(shape) equal `measured_s` (calibration
/// from a measured start-up time, as megascale.md M9 gives).
double calibrate_store_op_s(CommInitMethod method, const topology::JobShape& shape, double measured_s);

enum class CheckpointLoadMethod : uint8_t {
  EveryRankReads,   // each rank reads its shard from storage (DP replicas read the same bytes)
  ReaderPerDpGroup, // one rank per DP group reads, then broadcasts over the group (M16)
};
inline constexpr EnumNames<CheckpointLoadMethod, 2> kCheckpointLoadMethodNames{
    {{"every-rank-reads", CheckpointLoadMethod::EveryRankReads},
     {"reader-per-dp-group", CheckpointLoadMethod::ReaderPerDpGroup}}};

struct RecoveryPolicy {
  std::string name;
  RetransmitPolicy retransmit; // M13: what link outages the job survives
  DetectionPolicy detection;
  DiagnosticsPolicy diagnostics;
  ReplacementPolicy replacement;
  double restart_s = 120; // tear down, reschedule and relaunch the processes
  CommInitPolicy comm_init;
  CheckpointLoadMethod load_method = CheckpointLoadMethod::ReaderPerDpGroup;
};

/// Throws FaultError naming the policy and the field for negative times, rates outside
/// [0, 1], zero heartbeat period…
void validate_policy(const RecoveryPolicy& policy);

const char* to_string(CommInitMethod m);
const char* to_string(CheckpointLoadMethod m);

} // namespace twinscale::faults
