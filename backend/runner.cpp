#include "backend/runner.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <thread>
#include <tuple>
#include <unistd.h>

#include <mpi.h>

#include "backend/cuda/cuda_device.hpp"
#include "backend/detail/atomic_file.hpp"
#include "backend/detail/mpi_groups.hpp"
#include "backend/detail/peer_watch.hpp"
#include "backend/detail/redis_store.hpp"
#include "backend/error.hpp"
#include "records/run_dir.hpp"

namespace twinscale::backend {

namespace {

double steady_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

/// Waits for a non-blocking MPI request at most `timeout_s` (polling, with short sleeps).
bool wait_with_timeout(MPI_Request& request, double timeout_s) {
  const double deadline = steady_s() + timeout_s;
  for (;;) {
    int flag = 0;
    if (MPI_Test(&request, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (flag) return true;
    if (steady_s() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

std::string host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

/// Rank 0's choice of the step to restore: the newest restorable step of `ck.dir`, which
/// must be this job's (check_same_job). Throws naming every damaged step when there is
/// none; notes on stderr the newer steps it passed over.
int64_t choose_restore_step(const CheckpointOptions& ck, const schedules::Schedule& schedule) {
  remove_checkpoint_temporaries(ck.dir); // left by killed writers; this run writes later
  const CheckpointScan scan = scan_checkpoints(ck.dir);
  std::string skipped;
  for (const std::string& why : scan.skipped) skipped += "\n  " + why;
  if (!scan.step)
    throw BackendError("--restore: no complete checkpoint (a step-N directory with its manifest) in " + ck.dir +
                       (skipped.empty() ? std::string() : "; the steps there cannot be restored:" + skipped));
  if (!skipped.empty())
    std::fprintf(stderr, "twinscale run: --restore: restoring step %lld of %s; newer steps cannot be restored:%s\n",
                 static_cast<long long>(*scan.step), ck.dir.c_str(), skipped.c_str());
  try {
    check_same_job(read_manifest(ck.dir, *scan.step), ck.dir, job_identity(schedule), schedule.layout);
  } catch (const BackendError& e) {
    throw BackendError(std::string("--restore: ") + e.what());
  }
  return *scan.step;
}

void restore_checkpoint(const CheckpointOptions& ck, const schedules::Schedule& schedule, int rank, MPI_Comm dp,
                        double timeout_s, CheckpointOutcome& out) {
  // Rank 0 picks and checks the step, so that every rank restores the same one.
  long long step = -1;
  std::string refused;
  if (rank == 0) {
    try {
      step = choose_restore_step(ck, schedule);
    } catch (const BackendError& e) {
      refused = e.what(); // the others learn it as step -1 before rank 0 reports it
    }
  }
  MPI_Request req;
  MPI_Ibcast(&step, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD, &req);
  if (!wait_with_timeout(req, timeout_s)) throw BackendError("--restore: no step from rank 0 within the timeout");
  if (step < 0) {
    // every rank reports rank 0's reason: the first rank to exit makes mpirun stop the
    // others, so a message only rank 0 printed could be lost in the race
    int length = static_cast<int>(refused.size());
    MPI_Ibcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    if (wait_with_timeout(req, timeout_s) && length > 0) {
      refused.resize(static_cast<size_t>(length));
      MPI_Ibcast(refused.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD, &req);
      if (wait_with_timeout(req, timeout_s)) throw BackendError(refused);
    }
    throw BackendError("--restore: rank 0 found no checkpoint in " + ck.dir + " this run can restore");
  }
  const schedules::Layout& layout = schedule.layout;
  const schedules::RankCoord c = layout.coord(rank);
  const Manifest m = read_manifest(ck.dir, step); // rank 0 checked it is this job's
  const auto it =
      std::find_if(m.shards.begin(), m.shards.end(), [&](const ShardInfo& s) { return s.tp == c.tp && s.pp == c.pp; });
  if (it == m.shards.end())
    throw BackendError("--restore: checkpoint step " + std::to_string(step) + " has no shard tp" +
                       std::to_string(c.tp) + " pp" + std::to_string(c.pp));
  std::vector<uint8_t> data;
  double t = steady_s();
  if (c.dp == 0)
    data = read_shard(ck.dir, step, *it); // the DP group's one reader
  else
    data.resize(it->bytes);
  out.restore_read_s = steady_s() - t;
  t = steady_s();
  MPI_Ibcast(data.data(), static_cast<int>(data.size()), MPI_BYTE, 0, dp, &req);
  if (!wait_with_timeout(req, timeout_s))
    throw BackendError("--restore: the DP group's broadcast of the checkpoint did not finish within the timeout");
  out.restore_broadcast_s = steady_s() - t;
  if (data != synthetic_state(c.tp, c.pp, step, data.size()))
    throw BackendError("--restore: rank " + std::to_string(rank) + " restored state that differs from step " +
                       std::to_string(step) + "'s");
  out.restored_step = step;
}

/// After every shard is persisted: gather sizes and checksums on rank 0, which writes
/// the manifest last. Returns whether this rank knows the manifest was written.
bool commit_checkpoint(const CheckpointOptions& ck, const schedules::Schedule& schedule, int rank,
                       const ShardPersist* persist, double timeout_s) {
  const schedules::Layout& layout = schedule.layout;
  const schedules::RankCoord c = layout.coord(rank);
  unsigned long long mine[4] = {static_cast<unsigned long long>(c.tp), static_cast<unsigned long long>(c.pp), 0, 0};
  if (persist) {
    mine[2] = persist->data().size();
    mine[3] = fnv1a(persist->data().data(), persist->data().size());
  }
  const int size = static_cast<int>(layout.world());
  std::vector<unsigned long long> all(rank == 0 ? 4 * static_cast<size_t>(size) : 0);
  MPI_Request req;
  MPI_Igather(mine, 4, MPI_UNSIGNED_LONG_LONG, all.data(), 4, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD, &req);
  if (!wait_with_timeout(req, timeout_s)) return false;
  int ok = 1;
  if (rank == 0) {
    Manifest m;
    m.step = ck.step;
    m.job = job_identity(schedule);
    m.tp = layout.tp;
    m.pp = layout.pp;
    m.dp = layout.dp;
    for (int r = 0; r < size; ++r)
      if (layout.coord(r).dp == 0)
        m.shards.push_back(
            {static_cast<int64_t>(all[4 * r]), static_cast<int64_t>(all[4 * r + 1]), all[4 * r + 2], all[4 * r + 3]});
    std::sort(m.shards.begin(), m.shards.end(),
              [](const ShardInfo& a, const ShardInfo& b) { return std::tie(a.pp, a.tp) < std::tie(b.pp, b.tp); });
    write_manifest(ck.dir, m); // last: the step exists from now on
  }
  MPI_Ibcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
  return wait_with_timeout(req, timeout_s) && ok == 1;
}

// The stages of run_schedule, in order (each bounded by --timeout where it waits on peers).

void check_timeout(const RunOptions& options) {
  // nan and inf would switch the watchdog off (every comparison false / never reached):
  // survivors of a dead rank would then wait forever.
  if (!std::isfinite(options.executor.timeout_s) || options.executor.timeout_s <= 0) {
    std::ostringstream os;
    os << "--timeout " << options.executor.timeout_s
       << " must be a finite positive number of seconds (e.g. --timeout 60)";
    throw BackendError(os.str());
  }
}

/// MPI start-up: the library is the real one, the world has the schedule's ranks and the
/// launcher agrees on this rank. Fills out.rank, out.world, out.launcher.
void start_mpi(const schedules::Schedule& schedule, RunOutcome& out) {
  const LaunchEnv env = detect_launch_env();
  out.launcher = env.launcher;
  // An executable that also links SimGrid may bind MPI_* to SMPI's copies in
  // libsimgrid (they share names): refuse clearly instead of crashing inside SimGrid.
  Dl_info where{};
  if (::dladdr(reinterpret_cast<void*>(&MPI_Init_thread), &where) && where.dli_fname &&
      std::string(where.dli_fname).find("simgrid") != std::string::npos)
    throw BackendError(std::string("MPI_Init_thread resolves to ") + where.dli_fname +
                       " (SimGrid's SMPI), not to the MPI library: link twinscale_backend before twinscale_sim");
  const double t = steady_s();
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (provided < MPI_THREAD_FUNNELED) throw BackendError("the MPI library does not provide MPI_THREAD_FUNNELED");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  out.init_phases.push_back({"mpi_init", steady_s() - t});
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  out.rank = rank;
  out.world = size;
  if (size != schedule.world())
    throw BackendError("the launcher started " + std::to_string(size) + " ranks but the schedule of job \"" +
                       schedule.job.name + "\" needs " + std::to_string(schedule.world()) +
                       " (tp·pp·dp); start it with -np " + std::to_string(schedule.world()));
  if (env.launcher != "none" && env.rank != rank)
    throw BackendError("launcher rank " + std::to_string(env.rank) + " (" + env.launcher + ") differs from MPI rank " +
                       std::to_string(rank));
}

/// The Redis store of the rendezvous (M9), or null with MPI rendezvous: every rank
/// registers, then waits only for its own groups' members (no global barrier). `prefix`
/// becomes the run's key namespace (chosen by rank 0 unless given).
std::unique_ptr<detail::RedisStore> redis_rendezvous(const schedules::Schedule& schedule, const RunOptions& options,
                                                     int rank, std::string& prefix, RunOutcome& out) {
  prefix = options.rendezvous.prefix;
  if (options.rendezvous.kind != RendezvousSpec::Kind::Redis) return nullptr;
  const double t = steady_s();
  auto store = std::make_unique<detail::RedisStore>(options.rendezvous.host, options.rendezvous.port,
                                                    options.executor.timeout_s);
  if (prefix.empty()) {
    char id[64] = {};
    if (rank == 0) std::snprintf(id, sizeof id, "twinscale:%s:%ld", host_name().c_str(), static_cast<long>(::getpid()));
    MPI_Request req;
    MPI_Ibcast(id, sizeof id, MPI_CHAR, 0, MPI_COMM_WORLD, &req);
    if (!wait_with_timeout(req, options.executor.timeout_s))
      throw BackendError("rendezvous: no key prefix from rank 0 within the timeout");
    prefix = id;
  }
  store->rendezvous(prefix, schedule.layout, rank, host_name() + ":" + std::to_string(::getpid()),
                    schedule.job.model.experts > 0);
  out.init_phases.push_back({"redis_rendezvous", steady_s() - t});
  return store;
}

/// A run directory reused: rank 0 clears the last run's files.
void clear_run_dir(const RunOptions& options, int rank, int size) {
  if (rank != 0 || options.run_dir.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(options.run_dir, ec);
  for (const char* name : {"abort", "report.json"}) fs::remove(fs::path(options.run_dir) / name, ec);
  for (int r = 0; r < size; ++r)
    for (const char* ext : {".json", ".started", ".progress"})
      fs::remove(fs::path(options.run_dir) / ("rank-" + std::to_string(r) + ext), ec);
}

/// The common epoch: rank 0's clock when every rank has passed a barrier (exact on one
/// host, where steady_clock is shared; across hosts it is off by their offset). With a
/// run directory, writes rank-<r>.started (who runs where) for tools that watch a run.
double common_epoch(const RunOptions& options, int rank, RunOutcome& out) {
  const double t = steady_s();
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  if (!wait_with_timeout(req, options.executor.timeout_s))
    throw BackendError("start-up barrier: not every rank arrived within --timeout " +
                       std::to_string(options.executor.timeout_s) + " s");
  double epoch = steady_s();
  MPI_Ibcast(&epoch, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, &req);
  if (!wait_with_timeout(req, options.executor.timeout_s))
    throw BackendError("start-up: no epoch from rank 0 within the timeout");
  out.init_phases.push_back({"epoch", steady_s() - t});
  if (!options.run_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.run_dir, ec);
    detail::write_file_atomically(
        (std::filesystem::path(options.run_dir) / ("rank-" + std::to_string(rank) + ".started")).string(),
        "{\"rank\": " + std::to_string(rank) + ", \"pid\": " + std::to_string(::getpid()) + ", \"host\": \"" +
            host_name() + "\"}\n");
  }
  return epoch;
}

/// The device of this rank: the CPU device, or the CUDA device whose NCCL unique ids
/// travel through the store when there is one (M9), else MPI.
std::unique_ptr<Device> open_device(const schedules::Schedule& schedule, const RunOptions& options, int rank,
                                    detail::MpiGroups& groups, double epoch, detail::RedisStore* store,
                                    const std::string& prefix, RunOutcome& out) {
  if (options.device == DeviceKind::Cpu) {
    CpuDeviceOptions cpu = options.cpu;
    if (!options.run_dir.empty()) // stop waiting at the start barrier when a peer gave up or died
      cpu.should_abort = detail::start_barrier_abort(options.run_dir, rank, host_name());
    return std::make_unique<CpuDevice>(cpu, groups, epoch);
  }
  BroadcastFromRoot broadcast = [&options, rank, store, prefix](void* data, size_t bytes, const std::string& key) {
    if (store) {
      if (rank == 0) store->set(prefix + ":" + key, std::string(static_cast<char*>(data), bytes));
      const std::string v = store->get_wait(prefix + ":" + key);
      if (v.size() != bytes) throw BackendError("rendezvous: value of " + key + " has the wrong size");
      std::copy(v.begin(), v.end(), static_cast<char*>(data));
      return;
    }
    MPI_Request r;
    MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD, &r);
    if (!wait_with_timeout(r, options.executor.timeout_s))
      throw BackendError("rendezvous: " + key + " not received from rank 0 within the timeout");
  };
  // Without the toolkit, backend/detail/no_cuda_device.cpp throws a BackendError here.
  return make_cuda_device(schedule, rank, broadcast, epoch, options.executor.timeout_s, out.init_phases);
}

/// M16: restores the latest complete checkpoint (one reader per DP group, then a
/// broadcast to the group), then takes stage 1 of this run's checkpoint (blocking
/// snapshot) and returns stage 2 (the persist, in the background; null when this rank
/// persists nothing).
std::unique_ptr<ShardPersist> start_checkpoint(const schedules::Schedule& schedule, const RunOptions& options, int rank,
                                               detail::MpiGroups& groups, Device& device, RunOutcome& out) {
  const CheckpointOptions& ck = options.checkpoint;
  const schedules::RankCoord coord = schedule.layout.coord(rank);
  if (ck.restore)
    restore_checkpoint(ck, schedule, rank, groups.comm(schedules::GroupKind::Dp), options.executor.timeout_s,
                       out.checkpoint);
  if (ck.step < 0) return nullptr;
  const std::vector<uint8_t> device_state =
      synthetic_state(coord.tp, coord.pp, ck.step, static_cast<size_t>(ck.state_bytes));
  const double t = steady_s();
  std::vector<uint8_t> snapshot = device.stage1_snapshot(device_state); // stage 1: device → host memory
  out.checkpoint.snapshot_s = steady_s() - t;
  if (coord.dp != 0) return nullptr;
  return std::make_unique<ShardPersist>(shard_path(ck.dir, ck.step, coord.tp, coord.pp), std::move(snapshot),
                                        ck.persist_bw_bytes_per_s);
}

/// The executor's options with the run directory's watch: an abort flag any rank may
/// raise, and cross-rank progress (rank-<r>.progress holds the rank's effective progress
/// time, seconds since the common epoch; exact on one host, rewritten atomically).
ExecutorOptions watched_executor_options(const RunOptions& options, int rank) {
  ExecutorOptions exec_options = options.executor;
  if (options.run_dir.empty()) return exec_options;
  namespace fs = std::filesystem;
  const fs::path dir(options.run_dir);
  exec_options.should_abort = detail::abort_flag_up(options.run_dir);
  auto progress_file = [dir](int64_t r) { return (dir / ("rank-" + std::to_string(r) + ".progress")).string(); };
  exec_options.publish_progress = [path = progress_file(rank)](double t) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6f\n", t);
    detail::write_file_atomically(path, buf);
  };
  exec_options.peer_progress = [progress_file](int64_t r) {
    double t = -std::numeric_limits<double>::infinity();
    std::ifstream in(progress_file(r));
    if (!(in >> t)) t = -std::numeric_limits<double>::infinity();
    return t;
  };
  return exec_options;
}

/// After the executor: the abort flag when this rank failed, its state file (M19) and,
/// when it did not complete, what it waits for on stderr.
void record_rank_outcome(const RunOptions& options, int rank, const RunOutcome& out) {
  const bool completed = out.result.status == RunStatus::Completed;
  if (options.run_dir.empty() && completed) return;
  if (!options.run_dir.empty()) {
    if (out.result.status == RunStatus::TimedOut || out.result.status == RunStatus::OpFailed)
      detail::write_file_atomically(detail::abort_flag_path(options.run_dir),
                                    "{\"rank\": " + std::to_string(rank) + ", \"status\": \"" +
                                        std::string(to_string(out.result.status)) + "\"}\n");
    records::RankState st;
    st.rank = rank;
    st.pid = ::getpid();
    st.host = host_name();
    st.status = out.result.status;
    st.ops_completed = out.result.ops_completed;
    st.ops_total = out.result.ops_total;
    st.elapsed_s = out.result.elapsed_s;
    st.waiting = out.result.waiting;
    st.issued = out.result.issued;
    st.events = out.result.events;
    st.init_phases = out.init_phases;
    records::write_rank_state(options.run_dir, st);
  }
  if (completed) return;
  for (const records::WaitingOp& p : out.result.waiting) {
    std::string peers;
    for (int64_t q : p.peers) peers += (peers.empty() ? "" : ",") + std::to_string(q);
    std::fprintf(stderr, "twinscale run: rank %d waits for op %u %s (%s on %s #%lld) for %.3f s; peers [%s]\n", rank,
                 p.op_index, p.name.c_str(), std::string(schedules::to_string(p.kind)).c_str(), p.channel.c_str(),
                 static_cast<long long>(p.sequence), p.waiting_s, peers.c_str());
  }
}

/// Whether every rank completed (bounded: a dead rank never answers), then the end of
/// the checkpoint: the persist joined and, when every rank completed, the step committed.
void settle_run(const schedules::Schedule& schedule, const RunOptions& options, int rank, ShardPersist* persist,
                RunOutcome& out) {
  const bool completed = out.result.status == RunStatus::Completed;
  int mine = completed ? 1 : 0, all = 0;
  MPI_Request req;
  MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
  out.all_ranks_completed =
      wait_with_timeout(req, completed ? options.executor.timeout_s : options.settle_s) && all == 1;
  const CheckpointOptions& ck = options.checkpoint;
  if (persist) {
    const double t = steady_s();
    const std::string err = persist->join();
    out.checkpoint.persist_s = steady_s() - t;
    if (!err.empty()) {
      std::fprintf(stderr, "twinscale run: rank %d: checkpoint persist failed: %s\n", rank, err.c_str());
      out.all_ranks_completed = false; // not committed below
    }
  }
  if (ck.step >= 0 && out.all_ranks_completed) {
    out.checkpoint.committed = commit_checkpoint(ck, schedule, rank, persist, options.executor.timeout_s);
    if (!out.checkpoint.committed) {
      std::fprintf(stderr,
                   "twinscale run: rank %d: checkpoint step %lld not committed (a rank did not report its shard)\n",
                   rank, static_cast<long long>(ck.step));
      out.all_ranks_completed = false;
    }
  } else if (ck.step >= 0 && rank == 0)
    std::fprintf(stderr, "twinscale run: checkpoint step %lld not committed (the run did not complete)\n",
                 static_cast<long long>(ck.step));
}

/// Every rank's events gathered on rank 0 (4 doubles per event) into out.trace.
void gather_trace(const RunOptions& options, int rank, int size, const Device& device, RunOutcome& out) {
  std::vector<double> mine_ev;
  for (const auto& e : out.result.events)
    mine_ev.insert(mine_ev.end(), {static_cast<double>(e.op_index), e.start_s, e.end_s, e.failed ? 1.0 : 0.0});
  int count = static_cast<int>(mine_ev.size());
  std::vector<int> counts(rank == 0 ? size : 0);
  MPI_Request req;
  MPI_Igather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
  if (!wait_with_timeout(req, options.executor.timeout_s))
    throw BackendError("trace gather: rank 0 did not receive every rank's event count in time");
  std::vector<int> displs(counts.size(), 0);
  int total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    displs[i] = total;
    total += counts[i];
  }
  std::vector<double> all_ev(static_cast<size_t>(total));
  MPI_Igatherv(mine_ev.data(), count, MPI_DOUBLE, all_ev.data(), counts.data(), displs.data(), MPI_DOUBLE, 0,
               MPI_COMM_WORLD, &req);
  if (!wait_with_timeout(req, options.executor.timeout_s))
    throw BackendError("trace gather: rank 0 did not receive every rank's events in time");
  // each rank's host, as its state file names it (a fixed-size field; longer names are cut)
  constexpr int kHostBytes = 256;
  std::array<char, kHostBytes> mine_host{};
  const std::string host = host_name();
  std::memcpy(mine_host.data(), host.data(), std::min<size_t>(host.size(), kHostBytes - 1));
  std::vector<char> all_hosts(rank == 0 ? static_cast<size_t>(size) * kHostBytes : 0);
  MPI_Igather(mine_host.data(), kHostBytes, MPI_CHAR, all_hosts.data(), kHostBytes, MPI_CHAR, 0, MPI_COMM_WORLD, &req);
  if (!wait_with_timeout(req, options.executor.timeout_s))
    throw BackendError("trace gather: rank 0 did not receive every rank's host name in time");
  if (rank != 0) return;
  schedules::Trace trace;
  trace.source = std::string(device.name());
  for (int r = 0; r < size; ++r) {
    const char* h = all_hosts.data() + static_cast<size_t>(r) * kHostBytes;
    trace.hosts.emplace_back(h, ::strnlen(h, kHostBytes));
  }
  for (int r = 0; r < size; ++r)
    for (int k = displs[r]; k < displs[r] + counts[r]; k += 4)
      trace.events.push_back(
          schedules::TraceEvent{r, static_cast<uint32_t>(all_ev[k]), all_ev[k + 1], all_ev[k + 2], all_ev[k + 3] != 0});
  out.trace = std::move(trace);
}

/// M19: gives the other ranks time to write their states, then hands the run directory
/// to options.report_hang (who everyone waits on, report.json); the rank it names keeps
/// the summary to print.
void report_hang(const RunOptions& options, int rank, int size, RunOutcome& out) {
  if (!options.report_hang) return;
  std::this_thread::sleep_for(std::chrono::duration<double>(options.settle_s));
  out.report_summary = options.report_hang(options.run_dir, size, rank);
}

} // namespace

RunOutcome run_schedule(const schedules::Schedule& schedule, const RunOptions& options) {
  check_timeout(options);
  RunOutcome out;
  start_mpi(schedule, out);
  const int rank = static_cast<int>(out.rank), size = static_cast<int>(out.world);
  std::string prefix;
  const std::unique_ptr<detail::RedisStore> store = redis_rendezvous(schedule, options, rank, prefix, out);
  detail::MpiGroups groups(schedule.layout, rank, MPI_COMM_WORLD, options.group_init, schedule.job.model.experts > 0);
  for (const InitPhase& p : groups.phases()) out.init_phases.push_back(p);
  clear_run_dir(options, rank, size);
  const double epoch = common_epoch(options, rank, out);
  std::unique_ptr<Device> device = open_device(schedule, options, rank, groups, epoch, store.get(), prefix, out);
  const std::unique_ptr<ShardPersist> persist = start_checkpoint(schedule, options, rank, groups, *device, out);

  Executor executor(schedule, rank, *device, watched_executor_options(options, rank));
  out.result = executor.run();
  if (out.result.status != RunStatus::Completed) groups.leak();
  record_rank_outcome(options, rank, out);

  settle_run(schedule, options, rank, persist.get(), out);
  if (out.all_ranks_completed)
    gather_trace(options, rank, size, *device, out);
  else if (!options.run_dir.empty())
    report_hang(options, rank, size, out);
  device.reset();
  return out;
}

void finalize_backend(const RunOutcome& outcome) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && outcome.all_ranks_completed) MPI_Finalize();
}

} // namespace twinscale::backend
