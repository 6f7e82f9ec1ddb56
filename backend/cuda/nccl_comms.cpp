#include "backend/cuda/nccl_comms.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <sstream>
#include <tuple>

#include <cuda_runtime.h>
#include <mpi.h>

#include "backend/error.hpp"
#include "schedules/nccl_order.hpp"

namespace twinscale::backend::cuda {

using schedules::GroupKind;
using schedules::OpKind;

namespace {

double steady_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string version_string(int code) {
  // NCCL ≥ 2.9 encodes major·10000 + minor·100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

/// Waits (bounded) until a non-blocking call on `comm` has finished. Never aborts: on
/// a timeout it throws and the caller's CommSet aborts everything once.
void wait_ready(ncclComm_t comm, double deadline, const std::string& what) {
  ncclResult_t state = ncclInProgress;
  while (true) {
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess)
      throw BackendError("NCCL: " + what + ": ncclCommGetAsyncError failed");
    if (state != ncclInProgress) break;
    if (steady_s() > deadline) throw BackendError("NCCL: " + what + " did not finish within the timeout");
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  if (state != ncclSuccess) throw BackendError("NCCL: " + what + ": " + ncclGetErrorString(state));
}

/// One ncclCommSplit of the world that every rank runs: this rank's colour, key and the
/// channel the child communicator serves here (empty: not a member).
struct Split {
  std::string label; // for init phases and errors
  int color = NCCL_SPLIT_NOCOLOR;
  int key = 0;
  std::string channel;
  int peer = -1;
};

/// Collective splits: one per communicator class used anywhere in the schedule ("tp",
/// "dp", "dp@p1", …), in name order, so that every rank runs the same sequence.
std::vector<Split> collective_splits(const schedules::Schedule& s, int64_t rank) {
  std::map<std::string, GroupKind> classes;
  for (const auto& prog : s.programs)
    for (const auto& op : prog.ops)
      if (op.is_collective()) classes.emplace(schedules::communicator_of(s, 0, op), op.group);
  std::vector<Split> out;
  for (const auto& [name, kind] : classes) {
    Split sp;
    sp.label = name;
    std::vector<int64_t> members;
    if (kind == GroupKind::World)
      for (int64_t m = 0; m < s.world(); ++m) members.push_back(m);
    else
      members = s.layout.group_members(kind, rank);
    const auto me = std::find(members.begin(), members.end(), rank);
    if (me != members.end()) {
      sp.color = static_cast<int>(members.front());
      sp.key = static_cast<int>(me - members.begin());
      sp.channel = name;
    }
    out.push_back(std::move(sp));
  }
  return out;
}

/// Directed p2p splits: every (sender, receiver) pair of the schedule gets its own
/// 2-rank communicator; pairs are packed greedily into rounds in which each rank is in
/// at most one pair, one ncclCommSplit per round.
std::vector<Split> p2p_splits(const schedules::Schedule& s, int64_t rank) {
  std::vector<std::set<std::pair<GroupKind, int32_t>>> send_peers(s.programs.size());
  for (size_t p = 0; p < s.programs.size(); ++p)
    for (const auto& op : s.programs[p].ops)
      if (op.kind == OpKind::Send) send_peers[p].insert({op.group, op.peer});
  std::set<std::tuple<int64_t, int64_t, GroupKind>> pairs; // (sender, receiver, pp or cp)
  for (int64_t r = 0; r < s.world(); ++r)
    for (const auto& [g, q] : send_peers[s.program_of_rank[static_cast<size_t>(r)]])
      pairs.emplace(r, s.layout.group_members(g, r)[static_cast<size_t>(q)], g);
  std::vector<std::vector<std::tuple<int64_t, int64_t, GroupKind>>> rounds;
  std::vector<std::set<int64_t>> busy;
  for (const auto& pr : pairs) {
    size_t k = 0;
    while (k < rounds.size() && (busy[k].count(std::get<0>(pr)) || busy[k].count(std::get<1>(pr)))) ++k;
    if (k == rounds.size()) {
      rounds.emplace_back();
      busy.emplace_back();
    }
    rounds[k].push_back(pr);
    busy[k].insert(std::get<0>(pr));
    busy[k].insert(std::get<1>(pr));
  }
  std::vector<Split> out;
  for (size_t k = 0; k < rounds.size(); ++k) {
    Split sp;
    sp.label = "p2p_round_" + std::to_string(k);
    for (size_t j = 0; j < rounds[k].size(); ++j) {
      const auto [src, dst, g] = rounds[k][j];
      if (rank != src && rank != dst) continue;
      sp.color = static_cast<int>(j);
      sp.key = rank == src ? 0 : 1;
      const std::string group(schedules::to_string(g));
      sp.channel =
          rank == src ? "send:" + group + ":" + std::to_string(dst) : "recv:" + group + ":" + std::to_string(src);
      sp.peer = 1 - sp.key;
    }
    out.push_back(std::move(sp));
  }
  return out;
}

ncclComm_t init_world(const schedules::Schedule& schedule, int64_t rank, const BroadcastFromRoot& broadcast,
                      double timeout_s, std::vector<InitPhase>& phases, CommSet& comms) {
  double t = steady_s();
  ncclUniqueId id{};
  if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) throw BackendError("NCCL: ncclGetUniqueId failed");
  broadcast(&id, sizeof id, "nccl:world");
  phases.push_back({"nccl_id", steady_s() - t});

  t = steady_s();
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0; // non-blocking: the wait below is bounded by timeout_s
  ncclComm_t world = nullptr;
  const int size = static_cast<int>(schedule.world());
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 23, 0)
  const ncclResult_t r = ncclCommInitRankScalable(&world, size, static_cast<int>(rank), 1, &id, &config);
#else
  const ncclResult_t r = ncclCommInitRankConfig(&world, size, id, static_cast<int>(rank), &config);
#endif
  if (world) comms.set_world(world);
  if (r != ncclSuccess && r != ncclInProgress)
    throw BackendError(std::string("NCCL: world init: ") + ncclGetErrorString(r));
  wait_ready(world, t + timeout_s, "world communicator initialisation");
  phases.push_back({"nccl_world", steady_s() - t});
  return world;
}

/// A one-element operation on a new communicator, by every member at the same point of
/// the init sequence: NCCL connects peers lazily, at a communicator's first operation,
/// and with a blocking communicator that connection blocks the host until the peer
/// calls too — two ranks each blocked in the set-up of a send towards the other would
/// wait forever. Connecting here, where every member arrives, avoids that and keeps the
/// connection cost out of the first timed op. Bounded by `deadline`.
void connect_now(const Channel& c, bool collective, bool sender, void* buf, cudaStream_t stream, double deadline,
                 const std::string& label) {
  ncclResult_t r = ncclSuccess;
  auto* f = static_cast<float*>(buf);
  if (collective)
    r = ncclAllReduce(f, f + 1, 1, ncclFloat, ncclSum, c.comm, stream);
  else if (sender)
    r = ncclSend(f, 1, ncclFloat, c.peer, c.comm, stream);
  else
    r = ncclRecv(f + 1, 1, ncclFloat, c.peer, c.comm, stream);
  if (r != ncclSuccess && r != ncclInProgress)
    throw BackendError("NCCL: first operation on communicator " + label + ": " + ncclGetErrorString(r));
  while (true) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady)
      throw BackendError("CUDA: first operation on communicator " + label + ": " + cudaGetErrorString(e));
    if (steady_s() > deadline)
      throw BackendError("NCCL: first operation on communicator " + label + " did not finish within the timeout");
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void run_split(ncclComm_t world, const Split& sp, double timeout_s, CommSet& comms, void* buf, cudaStream_t stream) {
  ncclConfig_t child = NCCL_CONFIG_INITIALIZER;
  child.blocking = 1; // the hot path: calls return once enqueued
  ncclComm_t c = nullptr;
  ncclResult_t r = ncclSuccess;
  const double deadline = steady_s() + timeout_s;
  {
    Watchdog wd(timeout_s, [&comms] { comms.abort_all(); });
    r = ncclCommSplit(world, sp.color, sp.key, &c, &child);
    // The parent is non-blocking, so the split runs in NCCL's helper thread: it may
    // return ncclSuccess at once and set the child only when the split is complete
    // (seen on an H200 with NCCL 2.28). Wait, bounded, for the parent and the child.
    if ((r == ncclSuccess || r == ncclInProgress) && !wd.expired()) {
      wait_ready(world, deadline, "ncclCommSplit (" + sp.label + ")");
      if (!sp.channel.empty()) {
        std::atomic_ref<ncclComm_t> child_ref(c);
        while (!child_ref.load() && !wd.expired()) {
          if (steady_s() > deadline) break;
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        if (child_ref.load()) wait_ready(child_ref.load(), deadline, "communicator " + sp.label);
      }
      r = ncclSuccess;
    }
    if (r == ncclSuccess && c && !wd.expired()) {
      const bool collective = sp.channel.rfind("send:", 0) != 0 && sp.channel.rfind("recv:", 0) != 0;
      try {
        connect_now(Channel{c, sp.peer}, collective, sp.key == 0, buf, stream, deadline, sp.label);
      } catch (const BackendError&) {
        ncclCommAbort(c);
        throw;
      }
    }
    if (wd.expired()) {
      if (c) ncclCommAbort(c);
      throw BackendError("NCCL: ncclCommSplit (" + sp.label + ") did not finish within the timeout of " +
                         std::to_string(timeout_s) + " s; every communicator was aborted");
    }
  }
  if (r != ncclSuccess) {
    if (c) ncclCommAbort(c);
    throw BackendError("NCCL: ncclCommSplit (" + sp.label + "): " + ncclGetErrorString(r));
  }
  if (!sp.channel.empty()) {
    if (!c) throw BackendError("NCCL: ncclCommSplit (" + sp.label + ") gave no communicator to a member");
    comms.add(sp.channel, Channel{c, sp.peer});
  }
}

} // namespace

void check_nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) throw BackendError("NCCL: ncclGetVersion failed");
  // ncclCommSplit with a per-child config needs 2.18; this build uses
  // ncclCommInitRankScalable when compiled against ≥ 2.23 and then needs it at run time.
  const int needed = NCCL_VERSION_CODE >= NCCL_VERSION(2, 23, 0) ? NCCL_VERSION(2, 23, 0) : NCCL_VERSION(2, 18, 0);
  if (v < needed)
    throw BackendError("NCCL: the library loaded at run time is " + version_string(v) + "; this build (against " +
                       version_string(NCCL_VERSION_CODE) + ") needs at least " + version_string(needed) +
                       "; put a newer libnccl.so.2 first on LD_LIBRARY_PATH");
}

int local_gpu(int64_t rank, int gpus) {
  int mpi = 0;
  MPI_Initialized(&mpi);
  if (!mpi) return 0; // a process without MPI (a test) is alone on its host
  MPI_Comm host = MPI_COMM_NULL;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host) != MPI_SUCCESS)
    throw BackendError("rank " + std::to_string(rank) + ": MPI_Comm_split_type (ranks of this host) failed");
  int local = 0, local_size = 1;
  MPI_Comm_rank(host, &local);
  MPI_Comm_size(host, &local_size);
  MPI_Comm_free(&host);
  if (local_size > gpus)
    throw BackendError("--device cuda: rank " + std::to_string(rank) + " is one of " + std::to_string(local_size) +
                       " ranks on its host, which has " + std::to_string(gpus) +
                       " visible GPU(s); NCCL needs one GPU per rank (start at most " + std::to_string(gpus) +
                       " ranks per host, or use --device cpu)");
  return local;
}

Watchdog::Watchdog(double timeout_s, std::function<void()> on_expiry) {
  thread_ = std::thread([this, timeout_s, f = std::move(on_expiry)] {
    std::unique_lock lock(mutex_);
    if (cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [this] { return disarmed_; })) return;
    expired_ = true;
    lock.unlock();
    f();
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    disarmed_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

GroupGuard::GroupGuard() {
  if (ncclGroupStart() != ncclSuccess) {
    open_ = false;
    throw BackendError("NCCL: ncclGroupStart failed");
  }
}

GroupGuard::~GroupGuard() {
  if (open_) (void)ncclGroupEnd();
}

ncclResult_t GroupGuard::end() {
  open_ = false;
  return ncclGroupEnd();
}

CommSet::~CommSet() {
  // A CommSet that was not closed after a completed run is an error path (init failed,
  // or the run timed out): peers may be gone, so abort rather than finalise.
  if (!closed_) abort_all();
}

Channel CommSet::get(const std::string& channel) const {
  std::lock_guard lock(mutex_);
  if (aborted_) return {};
  const auto it = channels_.find(channel);
  return it == channels_.end() ? Channel{} : it->second;
}

void CommSet::add(const std::string& channel, Channel c) {
  std::lock_guard lock(mutex_);
  channels_[channel] = c;
}

void CommSet::set_world(ncclComm_t world) {
  std::lock_guard lock(mutex_);
  world_ = world;
}

ncclComm_t CommSet::world() const {
  std::lock_guard lock(mutex_);
  return aborted_ ? nullptr : world_;
}

void CommSet::abort_all() {
  std::lock_guard lock(mutex_);
  if (aborted_.exchange(true)) return;
  for (auto& [name, c] : channels_)
    if (c.comm) ncclCommAbort(c.comm);
  if (world_) ncclCommAbort(world_);
  channels_.clear();
  world_ = nullptr;
}

void CommSet::close(double timeout_s) {
  if (aborted_) {
    closed_ = true;
    return;
  }
  bool clean = true;
  {
    Watchdog wd(timeout_s, [this] { abort_all(); });
    std::vector<ncclComm_t> all;
    {
      std::lock_guard lock(mutex_);
      for (auto& [name, c] : channels_) all.push_back(c.comm);
      if (world_) all.push_back(world_);
    }
    for (ncclComm_t c : all) {
      if (aborted_) break;
      ncclResult_t r = ncclCommFinalize(c);
      ncclResult_t state = r;
      while (r == ncclSuccess && state == ncclInProgress && !aborted_) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        if (ncclCommGetAsyncError(c, &state) != ncclSuccess) break;
      }
      clean = clean && r == ncclSuccess && state == ncclSuccess;
    }
    if (!aborted_ && clean) {
      std::lock_guard lock(mutex_);
      for (ncclComm_t c : all) ncclCommDestroy(c);
      channels_.clear();
      world_ = nullptr;
    }
  }
  if (!clean) abort_all();
  closed_ = true;
}

namespace {

/// The world communicator, then `splits` in order (the same sequence on every rank).
std::unique_ptr<CommSet> make_comms(const schedules::Schedule& schedule, int64_t rank,
                                    const BroadcastFromRoot& broadcast, double timeout_s,
                                    const std::vector<Split>& splits, std::vector<InitPhase>& phases) {
  auto comms = std::make_unique<CommSet>(); // aborts whatever exists if we throw
  const ncclComm_t world = init_world(schedule, rank, broadcast, timeout_s, phases, *comms);
  // Scratch of the connecting operations (two floats) and their stream.
  // Freed only after success: on an error path a kernel may still be stuck on the
  // stream, and cudaFree would wait for it.
  struct Scratch {
    void* buf = nullptr;
    cudaStream_t stream = nullptr;
    bool ok = false;
    ~Scratch() {
      if (!ok) return;
      cudaStreamDestroy(stream);
      cudaFree(buf);
    }
  } scratch;
  if (cudaMalloc(&scratch.buf, 256) != cudaSuccess || cudaMemset(scratch.buf, 0, 256) != cudaSuccess ||
      cudaStreamCreateWithFlags(&scratch.stream, cudaStreamNonBlocking) != cudaSuccess)
    throw BackendError("CUDA: scratch buffer for NCCL's connection set-up");
  for (const Split& sp : splits) {
    const double t = steady_s();
    run_split(world, sp, timeout_s, *comms, scratch.buf, scratch.stream);
    phases.push_back({"nccl_" + sp.label, steady_s() - t});
  }
  scratch.ok = true;
  return comms;
}

} // namespace

std::unique_ptr<CommSet> create_comms(const schedules::Schedule& schedule, int64_t rank,
                                      const BroadcastFromRoot& broadcast, double timeout_s,
                                      std::vector<InitPhase>& phases) {
  std::vector<Split> splits = collective_splits(schedule, rank);
  for (Split& sp : p2p_splits(schedule, rank)) splits.push_back(std::move(sp));
  return make_comms(schedule, rank, broadcast, timeout_s, splits, phases);
}

std::string block_channel(int64_t n) { return "block:" + std::to_string(n); }

std::unique_ptr<CommSet> create_block_comms(const schedules::Schedule& schedule, int64_t rank,
                                            const BroadcastFromRoot& broadcast, double timeout_s,
                                            const std::set<int64_t>& sizes, std::vector<InitPhase>& phases) {
  std::vector<Split> splits;
  for (int64_t n : sizes) {
    Split sp;
    sp.label = "block_" + std::to_string(n);
    if (n >= 1 && rank < schedule.world() / n * n) {
      sp.color = static_cast<int>(rank / n);
      sp.key = static_cast<int>(rank % n);
      sp.channel = block_channel(n);
      sp.peer = sp.key < 2 ? 1 - sp.key : -1; // members 0 and 1 exchange point-to-point messages
    }
    splits.push_back(std::move(sp));
  }
  return make_comms(schedule, rank, broadcast, timeout_s, splits, phases);
}

} // namespace twinscale::backend::cuda
