// Checkpointing (M16): what a checkpoint holds (from the job), how long its two stages
// take (stage 1: blocking copy GPU → pinned host memory over PCIe; stage 2: asynchronous
// persist host → distributed storage) and how long loading it takes on recovery.
//
// A failure before stage 2 has finished loses that checkpoint: recovery falls back to the
// previous durable one (the campaign engine implements this).
#pragma once

#include <cstdint>

#include "faults/recovery_policy.hpp"
#include "schedules/job.hpp"
#include "topology/placement.hpp"

namespace twinscale::faults {

/// Bytes a checkpoint holds, per GPU and in all. Mixed-precision Adam/LAMB: BF16
/// parameters (2 B) plus FP32 master parameters and two moments (12 B) per parameter;
/// gradients are not saved. Parameters are split over TP·PP; the optimizer state is
/// further split over DP when ZeRO stage ≥ 1.
struct CheckpointState {
  double parameters = 0;              // model parameter count
  double param_bytes_per_gpu = 0;     // BF16 weights of one model-parallel shard (same on every DP replica)
  double optimizer_bytes_per_gpu = 0; // FP32 master + moments held by one GPU
  bool optimizer_sharded = false;     // ZeRO ≥ 1: each DP rank holds a distinct part
  double unique_bytes = 0;            // one full checkpoint
  topology::JobShape shape;
  int64_t gpus_per_node = 8;

  int64_t gpus() const { return shape.tp * shape.dp * shape.pp; }
  double nodes() const { return static_cast<double>(gpus()) / static_cast<double>(gpus_per_node); }
};

/// Parameter count of a GPT-style model: per layer 4h² + 2·h·f + f + 9h (QKV/output
/// projections, MLP, biases, two LayerNorms), plus word (V·h) and position (s·h) embeddings.
double parameter_count(const schedules::ModelSpec& model);

/// The checkpoint of `job` (its model and parallelism).
CheckpointState checkpoint_state(const schedules::JobSpec& job, int64_t gpus_per_node = 8);
/// A checkpoint of `parameters` parameters split over `shape` (for jobs given by size).
CheckpointState checkpoint_state(double parameters, const topology::JobShape& shape, bool zero_sharded,
                                 int64_t gpus_per_node = 8);

/// Bandwidths checkpointing uses. Storage bandwidths are aggregate over the cluster and
/// capped per node by the node's storage client. Recovery files set them ([storage]; the
/// keys and the sources of these defaults: docs/keys.md, from config/recovery_keys.cpp).
struct StorageSpec {
  double pcie_bw_bytes_per_s = 25e9;      // per GPU, GPU → pinned host (PCIe 4.0 x16, measured ~25 GB/s)
  double write_bw_bytes_per_s = 200e9;    // aggregate to the distributed file system (assumed)
  double read_bw_bytes_per_s = 400e9;     // aggregate from it (assumed)
  double client_bw_bytes_per_s = 12.5e9;  // per node, storage NIC (100 Gb/s, assumed)
  double broadcast_bw_bytes_per_s = 24e9; // per GPU, NCCL bus bandwidth per NIC measured on HDR 200G
};

struct CheckpointPolicy {
  double interval_s = 3600;  // training time between two checkpoints (Daly's τ)
  bool async_persist = true; // two-stage (M16); false: the job waits for storage too
  StorageSpec storage;
};

struct CheckpointTimes {
  double blocking_s = 0; // training stalls this long per checkpoint
  double persist_s = 0;  // then the checkpoint becomes durable this much later
  double load_s = 0;     // reading it back on recovery
};

/// Stage times for `state` under `policy`, and the load time under `method`:
///  - stage 1: (param + optimizer bytes per GPU) / PCIe bandwidth (all GPUs in parallel);
///  - stage 2: max(unique bytes / aggregate write bw, bytes per node / client bw);
///    with async_persist = false it is added to the blocking time instead;
///  - load, every rank reads: each GPU reads its parameters and optimizer part, so the DP
///    replicas read the parameters DP times over (and the optimizer too without ZeRO);
///  - load, one reader per DP group: the unique bytes are read once, then the replicated
///    part is broadcast over the DP group at broadcast_bw.
CheckpointTimes checkpoint_times(const CheckpointPolicy& policy, const CheckpointState& state,
                                 CheckpointLoadMethod method);

/// Throws FaultError if a bandwidth is ≤ 0 or the interval is shorter than the checkpoint
/// itself (blocking + persist: the next checkpoint would start before this one is durable);
/// the message gives the shortest valid interval.
void validate_checkpoint(const CheckpointPolicy& policy, const CheckpointTimes& times);

} // namespace twinscale::faults
