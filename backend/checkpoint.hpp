// Two-stage checkpoint of the synthetic training state (M16).
//  Stage 1 (blocking): the device state is copied to a host buffer (pinned on GPUs).
//  Stage 2 (asynchronous): a background thread persists the host copy to
//  <dir>/step-<N>/shard-tp<T>-pp<P>.bin — temp file, fsync, rename — while the run
//  goes on. Only data-parallel rank 0 of each (tp, pp) writes: DP replicas hold the same
//  partition. When every shard is persisted, world rank 0 writes manifest.json (sizes
//  and FNV-1a checksums) last, atomically; a step without a manifest does not exist.
//  Restore: one reader per DP group reads and checks its shard, then broadcasts it to
//  the group (the "shared read, then broadcast" of M16).
// This header is MPI-free; the runner does the cross-rank parts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "schedules/layout.hpp"

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

struct Manifest {
  int version = 1;
  int64_t step = 0;
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
/// Throws BackendError naming the file when it is malformed.
Manifest read_manifest(const std::string& dir, int64_t step);
/// The highest step of `dir` with a manifest whose shards all exist with the listed
/// sizes; nullopt when there is none.
std::optional<int64_t> latest_complete_step(const std::string& dir);

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
/// naming the file on a size or checksum mismatch.
std::vector<uint8_t> read_shard(const std::string& dir, int64_t step, const ShardInfo& info);

} // namespace twinscale::backend
