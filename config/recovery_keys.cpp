#include "config/recovery_keys.hpp"

#include <string>

#include "config/fault_file_keys.hpp"

namespace twinscale::config {

namespace {
using F = RecoveryFile;
using P = faults::RecoveryPolicy;
using D = faults::DetectionPolicy;
using Dg = faults::DiagnosticsPolicy;
using Rp = faults::ReplacementPolicy;
using Ci = faults::CommInitPolicy;
using Cp = faults::CheckpointPolicy;
using St = faults::StorageSpec;

/// A time in seconds, 0 to 10^12.
template <auto... Ms>
RecoveryKey seconds(std::string key) {
  return member<F, Ms...>(std::move(key)).range_number(0, 1e12).in("s");
}

/// A bandwidth > 0 in bytes/s.
template <auto... Ms>
RecoveryKey bandwidth(std::string key) {
  return member<F, Ms...>(std::move(key)).range_number(kAboveZero, 1e300).in("bytes/s");
}

void top_keys(std::vector<RecoveryKey>& k) {
  k.push_back(member<F, &F::policy, &P::name>("name")
                  .read_by_hand()
                  .default_is("the file's stem (a preset: its name)")
                  .says("the policy's name in results"));
  k.push_back(member<F, &F::source>("source").says("citation and assumptions, copied into results"));
  k.push_back(seconds<&F::policy, &P::restart_s>("restart_s")
                  .says("tear down, reschedule and relaunch the processes after a failure"));
  k.push_back(choice<F, &F::policy, &P::load_method>("load_method", faults::kCheckpointLoadMethodNames)
                  .says("how a restart reads the checkpoint: every rank reads its shard (DP replicas read the "
                        "same bytes), or one reader per DP group, then a broadcast over the group (M16)"));
  add_retransmit_keys<F, &F::policy, &P::retransmit>(k);
}

void detection_keys(std::vector<RecoveryKey>& k) {
  k.push_back(seconds<&F::policy, &P::detection, &D::explicit_error_s>("detection.explicit_error_s")
                  .says("an error in the logs or a process exit → the driver is notified"));
  k.push_back(member<F, &F::policy, &P::detection, &D::heartbeat_period_s>("detection.heartbeat_period_s")
                  .range_number(1e-6, 1e300)
                  .in("s")
                  .says("period of the executor daemon's heartbeat"));
  k.push_back(member<F, &F::policy, &P::detection, &D::heartbeat_misses>("detection.heartbeat_misses")
                  .range(1, 1000)
                  .says("heartbeats missed before a node is declared lost"));
  k.push_back(seconds<&F::policy, &P::detection, &D::traffic_window_s>("detection.traffic_window_s")
                  .says("RDMA traffic stopped this long → the job is declared hung"));
  k.push_back(seconds<&F::policy, &P::detection, &D::silent_s>("detection.silent_s")
                  .says("a fault with no signal (silent data corruption): time until noticed (a loss spike, "
                        "checks)"));
}

void diagnostics_keys(std::vector<RecoveryKey>& k) {
  k.push_back(
      seconds<&F::policy, &P::diagnostics, &Dg::duration_s>("diagnostics.duration_s").says("one diagnostics round"));
  k.push_back(member<F, &F::policy, &P::diagnostics, &Dg::false_negative_rate>("diagnostics.false_negative_rate")
                  .range_number(0, 1)
                  .says("P(a diagnosable fault is missed by a round)"));
  k.push_back(member<F, &F::policy, &P::diagnostics, &Dg::false_positive_rate>("diagnostics.false_positive_rate")
                  .range_number(0, 1)
                  .says("P(a round also evicts a healthy node)"));
  k.push_back(member<F, &F::policy, &P::diagnostics, &Dg::escalate_after>("diagnostics.escalate_after")
                  .range(1, 1000)
                  .says("misses of one fault before people investigate"));
  k.push_back(seconds<&F::policy, &P::diagnostics, &Dg::escalation_s>("diagnostics.escalation_s")
                  .says("a manual investigation, which always finds the fault"));
  k.push_back(
      seconds<&F::policy, &P::diagnostics, &Dg::missed_fault_recurrence_s>("diagnostics.missed_fault_recurrence_s")
          .says("a missed hardware fault strikes again this long after training resumes on it"));
}

void replacement_keys(std::vector<RecoveryKey>& k) {
  k.push_back(member<F, &F::policy, &P::replacement, &Rp::warm_spares>("replacement.warm_spares")
                  .range(0, 1000000)
                  .says("idle nodes ready to take a job's place"));
  k.push_back(seconds<&F::policy, &P::replacement, &Rp::spare_swap_s>("replacement.spare_swap_s")
                  .says("evict a node and bring a warm spare in"));
  k.push_back(seconds<&F::policy, &P::replacement, &Rp::cold_replacement_s>("replacement.cold_replacement_s")
                  .says("no spare left: wait for a node to be provisioned"));
  k.push_back(seconds<&F::policy, &P::replacement, &Rp::repair_s>("replacement.repair_s")
                  .says("an evicted node returns to the spare pool"));
}

void comm_init_keys(std::vector<RecoveryKey>& k) {
  k.push_back(choice<F, &F::policy, &P::comm_init, &Ci::method>("comm_init.method", faults::kCommInitMethodNames)
                  .says("global-barrier: a barrier over all ranks after each group's creation (O(N²) store "
                        "operations, torch.distributed); local-barrier: only a group's members (O(N), MegaScale)"));
  k.push_back(seconds<&F::policy, &P::comm_init, &Ci::store_op_s>("comm_init.store_op_s")
                  .says("one store operation (set, get, add, wait) at the store server; the default ≈ 361 s / "
                        "1,189,888 operations, MegaScale's (NSDI'24) start-up on 2,048 GPUs with a Redis store"));
}

void checkpoint_keys(std::vector<RecoveryKey>& k) {
  k.push_back(member<F, &F::checkpoint, &Cp::interval_s>("checkpoint.interval_s")
                  .range_number(kAboveZero, 1e300)
                  .in("s")
                  .says("training time between two checkpoints (Daly's τ; `twinscale tune-checkpoint` finds one)"));
  k.push_back(member<F, &F::checkpoint, &Cp::async_persist>("checkpoint.async_persist")
                  .says("two stages (M16): the job waits only for the copy to host memory; false: it waits for "
                        "storage too"));
  k.push_back(bandwidth<&F::checkpoint, &Cp::storage, &St::pcie_bw_bytes_per_s>("storage.pcie_bw_bytes_per_s")
                  .says("per GPU, GPU → pinned host memory; the default: PCIe 4.0 x16 (32 GB/s raw) as measured, "
                        "~25 GB/s"));
  k.push_back(bandwidth<&F::checkpoint, &Cp::storage, &St::write_bw_bytes_per_s>("storage.write_bw_bytes_per_s")
                  .says("aggregate, to the distributed file system; the default is assumed (no public figure)"));
  k.push_back(bandwidth<&F::checkpoint, &Cp::storage, &St::read_bw_bytes_per_s>("storage.read_bw_bytes_per_s")
                  .says("aggregate, from the distributed file system; the default is assumed (no public figure)"));
  k.push_back(bandwidth<&F::checkpoint, &Cp::storage, &St::client_bw_bytes_per_s>("storage.client_bw_bytes_per_s")
                  .says("per node, its storage client; the default: a 100 Gb/s storage NIC (assumed)"));
  k.push_back(bandwidth<&F::checkpoint, &Cp::storage, &St::broadcast_bw_bytes_per_s>("storage.broadcast_bw_bytes_per_s")
                  .says("per GPU, the NCCL broadcast of a loaded checkpoint over the DP group; the default: NCCL's "
                        "bus bandwidth per NIC measured on HDR 200G InfiniBand, ~24 GB/s"));
}

std::vector<RecoveryKey> make_keys() {
  std::vector<RecoveryKey> k;
  top_keys(k);
  detection_keys(k);
  diagnostics_keys(k);
  replacement_keys(k);
  comm_init_keys(k);
  checkpoint_keys(k);
  return k;
}
} // namespace

const std::vector<RecoveryKey>& recovery_keys() {
  static const std::vector<RecoveryKey> keys = make_keys();
  return keys;
}

const std::vector<KeySection>& recovery_sections() {
  static const std::vector<KeySection> sections = {
      {"", "", false, false, "The policy: its name, restart and how the checkpoint is loaded."},
      {"retransmit", "retransmit", false, false,
       "NCCL's RDMA retransmission (M13), as in fault plans: which link outages the job survives."},
      {"detection", "detection", false, false,
       "Time from a fault to the moment the driver acts on it, per detection signal (M14)."},
      {"diagnostics", "diagnostics", false, false,
       "Diagnostics on suspect nodes (M15): loopback, NIC-to-NIC, intra-node all-to-all, inter-node "
       "all-reduce with the ToR's neighbours."},
      {"replacement", "replacement", false, false, "Eviction and replacement of faulty nodes."},
      {"comm_init", "comm_init", false, false,
       "Communicator-group initialisation after a restart (M9): store operations × store_op_s."},
      {"checkpoint", "checkpoint", false, false, "Checkpointing (M16)."},
      {"storage", "storage", false, false,
       "Bandwidths checkpointing uses (M16): stage 1 copies GPU → host over PCIe, stage 2 persists to storage "
       "(aggregate bandwidths, capped per node by its storage client), a restart reads back and broadcasts. "
       "Sources of the defaults: PCIe 4.0 x16 measured ~25 GB/s per GPU; NCCL's per-NIC bus bandwidth on HDR "
       "200G ~24 GB/s; the storage figures (200 GB/s write, 400 GB/s read, a 100 Gb/s client per node) are "
       "assumptions."},
  };
  return sections;
}

} // namespace twinscale::config
