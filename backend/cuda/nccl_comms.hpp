// The CUDA device's NCCL communicators (private to backend/cuda/).
//
// One communicator per channel of schedules::communicator_of with the devices' model:
// "tp", "dp", "dp@p<k>" (one per data-parallel priority class), "pp", "embedding",
// "world" for collectives, and one 2-rank communicator per pipeline peer pair and
// direction ("send:pp:<B>" on A is "recv:pp:<A>" on B) for p2p, so that sends and
// receives never queue behind each other (schedules/nccl_order.hpp proves
// the resulting order deadlock-free for a valid schedule).
//
// World: ncclCommInitRankScalable (NCCL ≥ 2.23, else ncclCommInitRankConfig) as a
// non-blocking communicator, waited on with a deadline. Children: ncclCommSplit with
// blocking = 1, so that collectives on the hot path return once enqueued (a
// non-blocking communicator answers ncclInProgress and finishes the call in a helper
// thread: 100–250 µs of host latency per op); each split runs under a watchdog thread
// that aborts the world communicator when the split outlives the timeout; then every
// member runs one tiny operation on the child at once (NCCL connects lazily, and a
// blocking communicator's connection set-up blocks the host until the peer calls).
// Every communicator made before an error is aborted on the way out.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nccl.h>

#include "backend/cuda/cuda_device.hpp"
#include "backend/rendezvous.hpp"
#include "schedules/schedule.hpp"

namespace twinscale::backend::cuda {

/// Throws BackendError unless the NCCL library loaded at run time is at least the one
/// compiled against (ncclCommSplit and per-communicator configs need ≥ 2.18).
void check_nccl_version();

/// This rank's index among the ranks of its host (MPI_Comm_split_type SHARED), checked
/// against the visible GPUs: NCCL refuses two ranks on one GPU. Throws BackendError
/// naming the rank, the host's rank count and the GPU count.
int local_gpu(int64_t rank, int gpus);

/// Runs `on_expiry` on its own thread if not disarmed (destroyed) within `timeout_s`.
class Watchdog {
public:
  Watchdog(double timeout_s, std::function<void()> on_expiry);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  bool expired() const { return expired_.load(); }

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool disarmed_ = false;
  std::atomic<bool> expired_{false};
  std::thread thread_;
};

/// ncclGroupStart … ncclGroupEnd; the destructor ends a group left open by an exception.
class GroupGuard {
public:
  GroupGuard();
  ~GroupGuard();
  GroupGuard(const GroupGuard&) = delete;
  GroupGuard& operator=(const GroupGuard&) = delete;
  ncclResult_t end();

private:
  bool open_ = true;
};

struct Channel {
  ncclComm_t comm = nullptr;
  int peer = -1; // p2p: the peer's rank inside the 2-rank communicator
};

/// The communicators of one rank. abort_all() is idempotent and thread-safe: after it,
/// get() returns no communicator, so nothing uses a freed one.
class CommSet {
public:
  CommSet() = default;
  ~CommSet();
  CommSet(const CommSet&) = delete;
  CommSet& operator=(const CommSet&) = delete;

  /// nullptr comm when this rank has no such channel or after abort_all().
  Channel get(const std::string& channel) const;
  void add(const std::string& channel, Channel c);
  void set_world(ncclComm_t world);
  ncclComm_t world() const;

  /// ncclCommAbort on every communicator, once.
  void abort_all();
  bool aborted() const { return aborted_.load(); }
  /// After a completed run: finalise and destroy every communicator, each bounded by
  /// `timeout_s` (then everything is aborted instead).
  void close(double timeout_s);

private:
  mutable std::mutex mutex_;
  std::map<std::string, Channel> channels_;
  ncclComm_t world_ = nullptr;
  std::atomic<bool> aborted_{false};
  bool closed_ = false;
};

/// Creates every communicator `rank` needs (the same sequence of collective splits on
/// every rank); appends one InitPhase per step. Throws BackendError on failure or
/// timeout, with every communicator made so far aborted.
std::unique_ptr<CommSet> create_comms(const schedules::Schedule& schedule, int64_t rank,
                                      const BroadcastFromRoot& broadcast, double timeout_s,
                                      std::vector<InitPhase>& phases);

/// `probe --device cuda`: the world communicator and, for every n in `sizes`, one of n
/// consecutive ranks (channel block_channel(n); ranks past the last whole group are in
/// none), split and connected as create_comms does. Throws as create_comms.
std::unique_ptr<CommSet> create_block_comms(const schedules::Schedule& schedule, int64_t rank,
                                            const BroadcastFromRoot& broadcast, double timeout_s,
                                            const std::set<int64_t>& sizes, std::vector<InitPhase>& phases);
std::string block_channel(int64_t n);

} // namespace twinscale::backend::cuda
