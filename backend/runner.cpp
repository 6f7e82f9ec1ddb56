#include "backend/runner.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>
#include <unistd.h>

#include <mpi.h>

#include "backend/detail/atomic_file.hpp"
#include "backend/detail/mpi_groups.hpp"
#include "backend/detail/redis_store.hpp"
#include "backend/error.hpp"
#include "backend/hang_report.hpp"
#ifdef TWINSCALE_HAVE_CUDA
#include "backend/cuda/cuda_device.hpp"
#endif

namespace twinscale::backend {

namespace {

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

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

} // namespace

RunOutcome run_schedule(const schedules::Schedule& schedule, const RunOptions& options) {
  if (options.executor.timeout_s <= 0)
    throw BackendError("--timeout " + std::to_string(options.executor.timeout_s) +
                       " must be a positive number of seconds");
  RunOutcome out;
  const LaunchEnv env = detect_launch_env();
  out.launcher = env.launcher;

  double t = steady_s();
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (provided < MPI_THREAD_FUNNELED)
      throw BackendError("the MPI library does not provide MPI_THREAD_FUNNELED");
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
    throw BackendError("launcher rank " + std::to_string(env.rank) + " (" + env.launcher +
                       ") differs from MPI rank " + std::to_string(rank));

  // Rendezvous through the store (M9): every rank registers, then waits only for its
  // own groups' members (no global barrier).
  std::unique_ptr<detail::RedisStore> store;
  if (options.rendezvous.kind == RendezvousSpec::Kind::Redis) {
    t = steady_s();
    store = std::make_unique<detail::RedisStore>(options.rendezvous.host, options.rendezvous.port,
                                                 options.executor.timeout_s);
    std::string prefix = options.rendezvous.prefix;
    if (prefix.empty()) {  // one key namespace per run, chosen by rank 0
      char id[64] = {};
      if (rank == 0) std::snprintf(id, sizeof id, "twinscale:%s:%ld", host_name().c_str(), static_cast<long>(::getpid()));
      MPI_Request req;
      MPI_Ibcast(id, sizeof id, MPI_CHAR, 0, MPI_COMM_WORLD, &req);
      if (!wait_with_timeout(req, options.executor.timeout_s))
        throw BackendError("rendezvous: no key prefix from rank 0 within the timeout");
      prefix = id;
    }
    store->rendezvous(prefix, schedule.layout, rank, host_name() + ":" + std::to_string(::getpid()));
    out.init_phases.push_back({"redis_rendezvous", steady_s() - t});
  }

  detail::MpiGroups groups(schedule.layout, rank, MPI_COMM_WORLD, options.group_init);
  for (const InitPhase& p : groups.phases()) out.init_phases.push_back(p);

  if (rank == 0 && !options.run_dir.empty()) {  // a run directory reused: clear the last run's files
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(options.run_dir, ec);
    for (const char* name : {"abort", "report.json"}) fs::remove(fs::path(options.run_dir) / name, ec);
    for (int r = 0; r < size; ++r)
      for (const char* ext : {".json", ".started"})
        fs::remove(fs::path(options.run_dir) / ("rank-" + std::to_string(r) + ext), ec);
  }

  // The common epoch: rank 0's clock when every rank has passed a barrier (exact on
  // one host, where steady_clock is shared; across hosts it is off by their offset).
  t = steady_s();
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
  if (!options.run_dir.empty()) {  // who runs where, for tools (and tests) that watch a run
    std::error_code ec;
    std::filesystem::create_directories(options.run_dir, ec);
    detail::write_file_atomically(
        (std::filesystem::path(options.run_dir) / ("rank-" + std::to_string(rank) + ".started")).string(),
        "{\"rank\": " + std::to_string(rank) + ", \"pid\": " + std::to_string(::getpid()) +
            ", \"host\": \"" + host_name() + "\"}\n");
  }

  std::unique_ptr<Device> device;
  if (options.device == DeviceKind::Cpu) {
    device = std::make_unique<CpuDevice>(options.cpu, groups, epoch);
  } else {
#ifdef TWINSCALE_HAVE_CUDA
    t = steady_s();
    device = make_cuda_device(schedule, rank, store.get(), epoch, options.executor.timeout_s);
    out.init_phases.push_back({"nccl_init", steady_s() - t});
#else
    throw BackendError("--device cuda: this build has no CUDA device (no toolkit at configure time)");
#endif
  }
  ExecutorOptions exec_options = options.executor;
  const std::string abort_flag =
      options.run_dir.empty() ? "" : (std::filesystem::path(options.run_dir) / "abort").string();
  if (!abort_flag.empty()) {
    exec_options.should_abort = [abort_flag] { return std::filesystem::exists(abort_flag); };
  }
  Executor executor(schedule, rank, *device, exec_options);
  out.result = executor.run();
  const bool completed = out.result.status == RunStatus::Completed;
  if (!abort_flag.empty() && (out.result.status == RunStatus::TimedOut || out.result.status == RunStatus::OpFailed))
    detail::write_file_atomically(abort_flag, "{\"rank\": " + std::to_string(rank) + ", \"status\": \"" +
                                                  std::string(to_string(out.result.status)) + "\"}\n");
  if (!completed) groups.leak();

  if (!options.run_dir.empty()) {
    RankState st;
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
    write_rank_state(options.run_dir, st);
  }
  if (!completed) {
    for (const PendingOp& p : out.result.waiting) {
      std::string peers;
      for (int64_t q : p.peers) peers += (peers.empty() ? "" : ",") + std::to_string(q);
      std::fprintf(stderr, "twinscale run: rank %d waits for op %u %s (%s on %s #%lld) for %.3f s; peers [%s]\n",
                   rank, p.op_index, p.name.c_str(), std::string(schedules::to_string(p.kind)).c_str(),
                   p.channel.c_str(), static_cast<long long>(p.sequence), p.waiting_s, peers.c_str());
    }
  }

  // Do all ranks agree that the run completed? Bounded: a dead rank never answers.
  int mine = completed ? 1 : 0, all = 0;
  MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
  out.all_ranks_completed =
      wait_with_timeout(req, completed ? options.executor.timeout_s : options.settle_s) && all == 1;

  if (out.all_ranks_completed) {
    // Gather every rank's events on rank 0 (4 doubles per event).
    std::vector<double> mine_ev;
    for (const auto& e : out.result.events)
      mine_ev.insert(mine_ev.end(), {static_cast<double>(e.op_index), e.start_s, e.end_s, e.failed ? 1.0 : 0.0});
    int count = static_cast<int>(mine_ev.size());
    std::vector<int> counts(rank == 0 ? size : 0);
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
    MPI_Igatherv(mine_ev.data(), count, MPI_DOUBLE, all_ev.data(), counts.data(), displs.data(),
                 MPI_DOUBLE, 0, MPI_COMM_WORLD, &req);
    if (!wait_with_timeout(req, options.executor.timeout_s))
      throw BackendError("trace gather: rank 0 did not receive every rank's events in time");
    if (rank == 0) {
      schedules::Trace trace;
      trace.source = std::string(device->name());
      for (int r = 0; r < size; ++r)
        for (int k = displs[r]; k < displs[r] + counts[r]; k += 4)
          trace.events.push_back(schedules::TraceEvent{r, static_cast<uint32_t>(all_ev[k]), all_ev[k + 1],
                                                       all_ev[k + 2], all_ev[k + 3] != 0});
      out.trace = std::move(trace);
    }
  } else if (!options.run_dir.empty()) {
    // M19: give the other ranks time to write their states, then name who everyone waits on.
    std::this_thread::sleep_for(std::chrono::duration<double>(options.settle_s));
    const HangReport report = analyse_run_dir(options.run_dir, size);
    write_hang_report(report, (std::filesystem::path(options.run_dir) / "report.json").string());
    // The lowest rank that logged prints the summary (every writer writes the same file).
    if (!report.states.empty() && report.states.front().rank == rank) out.report_summary = report.summary();
  }
  device.reset();
  return out;
}

void finalize_backend(const RunOutcome& outcome) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && outcome.all_ranks_completed) MPI_Finalize();
}

} // namespace twinscale::backend
