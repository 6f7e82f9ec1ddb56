// Two-stage checkpoint of the synthetic training state (M16).
//  Stage 1 (blocking): the device state is copied to a host buffer (pinned on GPUs).
//  Stage 2 (asynchronous): a background thread persists the host copy to
//  <dir>/step-<N>/shard-tp<T>-pp<P>.bin — temp file, fsync, rename — while the run
//  goes on. Only data-parallel rank 0 of each (tp, pp) writes: DP replicas hold the same
//  partition. When every shard is persisted, world rank 0 writes manifest.json (sizes
//  and FNV-1a checksums) last, atomically; a step without a manifest does not exist.
//  Restore: one reader per DP group reads and checks its shard, then broadcasts it to
//  the group (the "shared read, then broadcast" of M16).
//  A manifest carries the identity of the job that wrote it (its name and the FNV-1a of
//  its schedule's JSON) beside the layout and the step: a restore refuses another job's
//  checkpoint, and every way a step can be damaged is named (see scan_checkpoints).
// This header is MPI-free; the runner does the cross-rank parts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "schedules/layout.hpp"
#include "schedules/schedule.hpp"

namespace twinscale::backend {

struct CheckpointOptions {
  std::string dir;              // empty: no checkpoint
  int64_t step = -1;            // >= 0: write this step (persisted during the run)
  bool restore = false;         // restore the latest complete step before the run
  double state_bytes = 1 << 20; // synthetic state per (tp, pp) shard
  /// Storage bandwidth the persist thread paces itself to (0: as fast as the disk);
  /// models slow shared storage and makes the persist window observable.
  double persist_bw_bytes_per_s = 0;
};

struct ShardInfo {
  int64_t tp = 0;
  int64_t pp = 0;
  uint64_t bytes = 0;
  uint64_t fnv1a = 0;
};

/// Which job a checkpoint belongs to: the job's name (for messages) and the FNV-1a 64 of
/// its schedule's JSON text (schedules::write_schedule_json) as 16 hex digits, which
/// differs between jobs of one layout (tiny-1f1b and tiny-interleaved).
struct JobIdentity {
  std::string name;
  std::string schedule_fnv1a;
};

/// The identity of the job `schedule` describes.
JobIdentity job_identity(const schedules::Schedule& schedule);

/// The manifest format this build writes and reads. Version 1 had no job identity.
inline constexpr int kManifestVersion = 2;

struct Manifest {
  int version = kManifestVersion;
  int64_t step = 0;
  JobIdentity job;
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t dp = 1;
  std::vector<ShardInfo> shards; // sorted by (pp, tp)
};

/// The synthetic state of shard (tp, pp) at `step`: a deterministic byte pattern, so a
/// restore can prove it read back exactly what was written.
std::vector<uint8_t> synthetic_state(int64_t tp, int64_t pp, int64_t step, size_t bytes);
uint64_t fnv1a(const uint8_t* data, size_t bytes);

std::string step_dir(const std::string& dir, int64_t step);
std::string shard_path(const std::string& dir, int64_t step, int64_t tp, int64_t pp);

/// Commits step m.step: writes its manifest (atomically, last) and then removes the
/// shard temporaries (shard-*.bin.tmp.<pid>) a killed writer left in that step's folder;
/// every shard of the step is persisted by then, so any temporary there is stale.
void write_manifest(const std::string& dir, const Manifest& m);
/// Removes the shard temporaries (shard-*.bin.tmp.<pid>) of every step-N folder of `dir`,
/// or of step `only_step`; returns how many. Called on restore, before the run writes.
size_t remove_checkpoint_temporaries(const std::string& dir, std::optional<int64_t> only_step = std::nullopt);
/// Throws BackendError naming the file and what is wrong with it: not a regular file, not
/// JSON, a repeated or unknown key, another format or version (1: no job identity), a
/// field missing or out of range, a step other than its folder's, shards that do not
/// cover the layout's (tp, pp) pairs exactly once.
Manifest read_manifest(const std::string& dir, int64_t step);

/// The steps of a checkpoint folder, newest first: the newest restorable one and, for
/// every newer step that is not, why ("step 3: shard …: not a regular file").
struct CheckpointScan {
  std::optional<int64_t> step;
  std::vector<std::string> skipped;
};
/// A step is restorable when its manifest reads (read_manifest) and every shard it lists
/// is a regular file of the listed size (checksums are checked when a shard is read).
CheckpointScan scan_checkpoints(const std::string& dir);
/// scan_checkpoints(dir).step.
std::optional<int64_t> latest_complete_step(const std::string& dir);

/// Throws BackendError unless manifest `m` (step m.step of `dir`) was written by the job
/// `run` with the run's tp and pp: the message names both jobs, or both layouts.
void check_same_job(const Manifest& m, const std::string& dir, const JobIdentity& run, const schedules::Layout& layout);

/// Stage 2 of one shard: persists `host_copy` in the background.
class ShardPersist {
public:
  ShardPersist(std::string path, std::vector<uint8_t> host_copy, double bw_bytes_per_s);
  ~ShardPersist();
  ShardPersist(const ShardPersist&) = delete;
  ShardPersist& operator=(const ShardPersist&) = delete;
  /// Waits for the persist; returns an error message, empty on success.
  std::string join();
  const std::vector<uint8_t>& data() const { return data_; }

private:
  std::string path_;
  std::vector<uint8_t> data_;
  std::string error_;
  std::thread thread_;
};

/// Reads one shard and checks it against its manifest entry; throws BackendError
/// naming the file when it is missing, not a regular file (a folder, a link to a
/// device), of another size or checksum than the manifest lists.
std::vector<uint8_t> read_shard(const std::string& dir, int64_t step, const ShardInfo& info);

} // namespace twinscale::backend
