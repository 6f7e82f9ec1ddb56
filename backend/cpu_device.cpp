#include "backend/cpu_device.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include <mpi.h>

#include "backend/detail/cpu_kernels.hpp"
#include "backend/detail/mpi_groups.hpp"
#include "backend/error.hpp"
#include "backend/executor.hpp"
#include "schedules/error.hpp"
#include "schedules/execution_rules.hpp"

namespace twinscale::backend {

using schedules::GroupKind;
using schedules::Op;
using schedules::OpKind;

namespace {

double steady_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct CommState {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<float> send, recv;
  int64_t group_rank = 0, group_size = 1, sequence = 0, per_member = 0;
};

} // namespace

struct CpuDevice::Impl {
  CpuDeviceOptions options;
  const detail::MpiGroups& groups;
  double epoch;
  const schedules::Schedule* schedule = nullptr;
  const schedules::Program* program = nullptr;
  int64_t rank = 0;
  std::vector<DeviceOpTiming> timing;
  std::vector<std::unique_ptr<CommState>> comm;
  std::vector<int64_t> sequence; // op → index on its channel
  // NCCL's rule, kept on the CPU too: the ops of one communicator (channel) run in issue
  // order, each posted only once every op issued before it there has completed. So an
  // issue order that would deadlock NCCL deadlocks here, and CI sees it without a GPU.
  std::vector<std::string> channel;                          // op → its communicator (op_channel)
  std::map<std::string, std::deque<uint32_t>> channel_queue; // issued, not completed
  std::vector<bool> posted;
  // Communication buffers, reused: a finished transfer's buffers go back here and the
  // next transfer takes the smallest that fits. The warm start fills it with one pair of
  // every size the program moves, first-touched, so no transfer of a run pays for fresh
  // pages (as training keeps its gradient and activation buffers: docs/backend.md).
  std::multimap<size_t, std::vector<float>> spare;       // capacity → buffer
  std::unique_ptr<std::atomic<uint8_t>[]> compute_state; // 0 pending, 1 done, 2 failed

  // Compute streams (Compute, Data): one thread each, running kernels in issue order.
  struct Worker {
    std::deque<uint32_t> queue;
    std::thread thread;
    std::unique_ptr<detail::CpuKernels> kernels;
  };
  std::mutex mutex;
  std::condition_variable work_cv, done_cv;
  std::array<Worker, schedules::kStreamCount> workers;
  uint64_t completions = 0, seen_completions = 0;
  bool stop = false;

  Impl(CpuDeviceOptions o, const detail::MpiGroups& g, double e) : options(o), groups(g), epoch(e) {
    if (options.shape_divisor < 1)
      throw BackendError("CPU device: shape divisor " + std::to_string(options.shape_divisor) + " must be >= 1");
  }

  double now() const { return steady_s() - epoch; }

  void worker_loop(size_t stream) {
    Worker& w = workers[stream];
    for (;;) {
      uint32_t i;
      {
        std::unique_lock lock(mutex);
        work_cv.wait(lock, [&] { return stop || !w.queue.empty(); });
        if (stop) return;
        i = w.queue.front();
        w.queue.pop_front();
      }
      const Op& op = program->ops[i];
      timing[i].start_s = now();
      uint8_t outcome = 1;
      try {
        w.kernels->run(op, detail::scaled_shape(op, options.shape_divisor));
        if (rank == options.delay_rank && options.compute_delay_s > 0)
          std::this_thread::sleep_for(std::chrono::duration<double>(options.compute_delay_s));
        timing[i].end_s = now();
        timing[i].valid = true;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "twinscale run: rank %lld: op %u failed: %s\n", static_cast<long long>(rank), i, e.what());
        outcome = 2;
      }
      compute_state[i].store(outcome, std::memory_order_release);
      {
        std::lock_guard lock(mutex);
        ++completions;
      }
      done_cv.notify_all();
    }
  }

  void stop_workers() {
    {
      std::lock_guard lock(mutex);
      stop = true;
      for (Worker& w : workers) w.queue.clear();
    }
    work_cv.notify_all();
    for (Worker& w : workers)
      if (w.thread.joinable()) w.thread.join();
  }

  MPI_Comm comm_of(const Op& op) const {
    MPI_Comm c = groups.comm(op.group);
    TWINSCALE_ASSERT(c != MPI_COMM_NULL, "op on a group this rank is not a member of");
    return c;
  }

  std::vector<float> take(size_t elements) {
    if (elements == 0) return {};
    auto it = spare.lower_bound(elements);
    if (it == spare.end()) return {};
    std::vector<float> v = std::move(it->second);
    spare.erase(it);
    return v;
  }

  void give(std::vector<float>& v) {
    if (v.capacity() > 0) spare.emplace(v.capacity(), std::move(v));
    v = {};
  }

  /// Elements of the send and receive buffers of communication op `op` (as post()).
  std::pair<int64_t, int64_t> buffer_elements(const Op& op) const {
    const int64_t floats = static_cast<int64_t>(std::ceil(detail::scaled_bytes(op, options.shape_divisor) / 4.0));
    const int64_t n = schedule->layout.group_size(op.group);
    const int64_t per = std::max<int64_t>(1, (floats + n - 1) / n);
    switch (op.kind) {
    case OpKind::AllReduce: return {floats, floats};
    case OpKind::AllGather: return {per, per * n};
    case OpKind::ReduceScatter: return {per * n, per};
    case OpKind::AllToAll: return {per * n, per * n};
    case OpKind::Broadcast: return {0, floats};
    case OpKind::Send: return {floats, 0};
    case OpKind::Recv: return {0, floats};
    default: return {0, 0};
    }
  }

  /// One first-touched buffer of every size the program's transfers use.
  void warm_buffers() {
    std::set<int64_t> sizes;
    for (const Op& op : program->ops) {
      if (!op.is_communication()) continue;
      const auto [send, recv] = buffer_elements(op);
      for (int64_t e : {send, recv})
        if (e > 0) sizes.insert(e);
    }
    for (int64_t e : sizes)
      for (int k = 0; k < 2; ++k) { // a send and a receive buffer of this size
        std::vector<float> v(static_cast<size_t>(e), 0.0f);
        give(v);
      }
  }

  void post(uint32_t i) {
    const Op& op = program->ops[i];
    auto st = std::make_unique<CommState>();
    st->group_rank = schedule->layout.group_rank(op.group, rank);
    st->group_size = schedule->layout.group_size(op.group);
    st->sequence = sequence[i];
    const int64_t floats = static_cast<int64_t>(std::ceil(detail::scaled_bytes(op, options.shape_divisor) / 4.0));
    const int64_t n = st->group_size;
    const int64_t per = std::max<int64_t>(1, (floats + n - 1) / n);
    st->per_member = per;
    const float mine = static_cast<float>(st->group_rank + 1);
    MPI_Comm c = comm_of(op);
    int rc = MPI_SUCCESS;
    const auto [send_elements, recv_elements] = buffer_elements(op);
    st->send = take(static_cast<size_t>(send_elements));
    st->recv = take(static_cast<size_t>(recv_elements));
    timing[i].start_s = now();
    // Filled inside the transfer's time (the data a real job would have written); the
    // receive buffer cleared, so verify() sees only what arrived.
    switch (op.kind) {
    case OpKind::AllReduce:
      st->send.assign(static_cast<size_t>(floats), mine);
      st->recv.assign(static_cast<size_t>(floats), 0.0f);
      rc = MPI_Iallreduce(st->send.data(), st->recv.data(), static_cast<int>(floats), MPI_FLOAT, MPI_SUM, c,
                          &st->request);
      break;
    case OpKind::AllGather:
      st->send.assign(static_cast<size_t>(per), mine);
      st->recv.assign(static_cast<size_t>(per * n), 0.0f);
      rc = MPI_Iallgather(st->send.data(), static_cast<int>(per), MPI_FLOAT, st->recv.data(), static_cast<int>(per),
                          MPI_FLOAT, c, &st->request);
      break;
    case OpKind::ReduceScatter:
      st->send.assign(static_cast<size_t>(per * n), mine);
      st->recv.assign(static_cast<size_t>(per), 0.0f);
      rc = MPI_Ireduce_scatter_block(st->send.data(), st->recv.data(), static_cast<int>(per), MPI_FLOAT, MPI_SUM, c,
                                     &st->request);
      break;
    case OpKind::AllToAll:
      st->send.resize(static_cast<size_t>(per * n));
      for (int64_t j = 0; j < n; ++j) // block j goes to member j
        std::fill_n(st->send.begin() + j * per, per, static_cast<float>(st->group_rank * 1000 + j));
      st->recv.assign(static_cast<size_t>(per * n), 0.0f);
      rc = MPI_Ialltoall(st->send.data(), static_cast<int>(per), MPI_FLOAT, st->recv.data(), static_cast<int>(per),
                         MPI_FLOAT, c, &st->request);
      break;
    case OpKind::Broadcast: {
      const int root = op.peer >= 0 ? op.peer : 0;
      st->recv.assign(static_cast<size_t>(floats),
                      st->group_rank == root ? static_cast<float>(7 + st->sequence % 1000) : 0.0f);
      rc = MPI_Ibcast(st->recv.data(), static_cast<int>(floats), MPI_FLOAT, root, c, &st->request);
      break;
    }
    case OpKind::Send:
      st->send.assign(static_cast<size_t>(floats), static_cast<float>(1 + st->sequence % 30000));
      rc = MPI_Isend(st->send.data(), static_cast<int>(floats), MPI_FLOAT, op.peer,
                     static_cast<int>(st->sequence % 30000), c, &st->request);
      break;
    case OpKind::Recv:
      st->recv.assign(static_cast<size_t>(floats), 0.0f);
      rc = MPI_Irecv(st->recv.data(), static_cast<int>(floats), MPI_FLOAT, op.peer,
                     static_cast<int>(st->sequence % 30000), c, &st->request);
      break;
    default: TWINSCALE_ASSERT(false, "post() of a compute op");
    }
    if (rc != MPI_SUCCESS) st->request = MPI_REQUEST_NULL; // poll() reports it failed
    comm[i] = std::move(st);
  }

  /// Runs every distinct compute op of the program once on its stream's kernels, so the
  /// reused buffers reach their largest size (allocation, first-touch page faults,
  /// synthetic data) and the code and data are warm before the first timed op — as the
  /// probe's warm-up repetitions leave its kernels.
  void warm_up() {
    std::set<std::tuple<size_t, int, int, std::array<int64_t, 4>>> seen;
    for (const Op& op : program->ops) {
      if (op.is_communication()) continue;
      const size_t st = static_cast<size_t>(op.stream);
      const std::array<int64_t, 4> shape = detail::scaled_shape(op, options.shape_divisor);
      if (!seen.insert({st, static_cast<int>(op.kind), static_cast<int>(op.kernel), shape}).second) continue;
      try {
        workers[st].kernels->run(op, shape);
      } catch (const std::exception& e) {
        const std::string name = op.name < schedule->names.size() ? schedule->names[op.name] : "";
        throw BackendError("CPU device: rank " + std::to_string(rank) + ": warm-up of op " +
                           std::to_string(&op - program->ops.data()) + " (" + name + "): " + e.what());
      }
    }
  }

  /// Every rank waits here until all have warmed up, so no rank's first op waits for a
  /// peer still preparing (a peer's short --timeout would count that as no progress).
  void start_barrier() const {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) return;
    MPI_Request req = MPI_REQUEST_NULL;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &req) != MPI_SUCCESS)
      throw BackendError("CPU device: the start barrier after the warm-up failed");
    const double deadline = steady_s() + options.start_timeout_s;
    for (int done = 0, polls = 0;; ++polls) {
      if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        throw BackendError("CPU device: the start barrier after the warm-up failed");
      if (done) return;
      if (steady_s() > deadline)
        throw BackendError("CPU device: rank " + std::to_string(rank) +
                           ": not every rank finished its warm-up within " + std::to_string(options.start_timeout_s) +
                           " s (CpuDeviceOptions::start_timeout_s)");
      if (polls % 100 == 99 && options.should_abort && options.should_abort()) // every 20 ms: a file check
        throw BackendError("CPU device: rank " + std::to_string(rank) +
                           ": another rank aborted the run or died (the run directory's abort flag, or a rank of "
                           "this host whose process is gone) while this rank waited at the start barrier for every "
                           "rank's warm-up");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  /// True when the received data is what the peers sent.
  bool verify(uint32_t i) const {
    const Op& op = program->ops[i];
    const CommState& st = *comm[i];
    const double n = static_cast<double>(st.group_size);
    auto all_equal = [](const std::vector<float>& v, size_t from, size_t count, double want) {
      if (count == 0) return true;
      return v[from] == static_cast<float>(want) && v[from + count - 1] == static_cast<float>(want);
    };
    switch (op.kind) {
    case OpKind::AllReduce:
    case OpKind::ReduceScatter: return all_equal(st.recv, 0, st.recv.size(), n * (n + 1) / 2);
    case OpKind::AllGather:
      for (int64_t j = 0; j < st.group_size; ++j)
        if (!all_equal(st.recv, static_cast<size_t>(j * st.per_member), static_cast<size_t>(st.per_member),
                       static_cast<double>(j + 1)))
          return false;
      return true;
    case OpKind::AllToAll:
      for (int64_t j = 0; j < st.group_size; ++j)
        if (!all_equal(st.recv, static_cast<size_t>(j * st.per_member), static_cast<size_t>(st.per_member),
                       static_cast<double>(j * 1000 + st.group_rank)))
          return false;
      return true;
    case OpKind::Broadcast: return all_equal(st.recv, 0, st.recv.size(), 7 + st.sequence % 1000);
    case OpKind::Recv: return all_equal(st.recv, 0, st.recv.size(), 1 + st.sequence % 30000);
    default: return true;
    }
  }
};

CpuDevice::CpuDevice(CpuDeviceOptions options, const detail::MpiGroups& groups, double epoch_steady_s)
    : impl_(std::make_unique<Impl>(options, groups, epoch_steady_s)) {}

CpuDevice::~CpuDevice() { impl_->stop_workers(); }

void CpuDevice::prepare(const schedules::Schedule& schedule, int64_t rank) {
  Impl& d = *impl_;
  TWINSCALE_ASSERT(d.program == nullptr, "CpuDevice prepared twice");
  d.schedule = &schedule;
  d.program = &schedule.program(rank);
  d.rank = rank;
  const size_t n = d.program->ops.size();
  d.timing.assign(n, DeviceOpTiming{});
  d.comm.resize(n);
  d.sequence.assign(n, 0);
  d.channel.assign(n, {});
  d.posted.assign(n, false);
  d.compute_state = std::make_unique<std::atomic<uint8_t>[]>(n);
  const schedules::ProgramIndex index(*d.program, schedule.program_of_rank[static_cast<size_t>(rank)]);
  for (uint32_t i = 0; i < n; ++i) {
    const Op& op = d.program->ops[i];
    d.compute_state[i].store(0);
    d.channel[i] = op_channel(schedule, rank, op);
    if (!d.channel[i].empty()) d.sequence[i] = index.sequence(i); // execution rules: number on its channel
  }
  for (const Op& op : d.program->ops) { // kernels (and buffers) per compute stream in use
    const size_t st = static_cast<size_t>(op.stream);
    if (!op.is_communication() && !d.workers[st].kernels)
      d.workers[st].kernels = std::make_unique<detail::CpuKernels>(d.options.max_buffer_bytes);
  }
  if (d.options.warm_up) {
    d.warm_up();
    d.warm_buffers();
  }
  for (size_t st = 0; st < d.workers.size(); ++st) // one thread per compute stream in use
    if (d.workers[st].kernels) d.workers[st].thread = std::thread([&d, st] { d.worker_loop(st); });
  if (d.options.warm_up) d.start_barrier();
}

void CpuDevice::issue(uint32_t index, std::span<const uint32_t>) {
  Impl& d = *impl_;
  const Op& op = d.program->ops[index];
  if (op.is_communication()) {
    auto& queue = d.channel_queue[d.channel[index]];
    queue.push_back(index);
    if (queue.front() == index) {
      d.post(index);
      d.posted[index] = true;
    }
    return;
  }
  {
    std::lock_guard lock(d.mutex);
    d.workers[static_cast<size_t>(op.stream)].queue.push_back(index);
  }
  d.work_cv.notify_all();
}

OpStatus CpuDevice::poll(uint32_t index) {
  Impl& d = *impl_;
  const Op& op = d.program->ops[index];
  if (!op.is_communication()) {
    const uint8_t s = d.compute_state[index].load(std::memory_order_acquire);
    return s == 0 ? OpStatus::Pending : s == 1 ? OpStatus::Done : OpStatus::Failed;
  }
  auto& queue = d.channel_queue[d.channel[index]];
  if (!d.posted[index]) { // queued behind an earlier op of its communicator
    if (queue.front() != index) return OpStatus::Pending;
    d.post(index);
    d.posted[index] = true;
  }
  CommState& st = *d.comm[index];
  if (st.request == MPI_REQUEST_NULL && !d.timing[index].valid) return OpStatus::Failed;
  int flag = 0;
  if (MPI_Test(&st.request, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return OpStatus::Failed;
  if (!flag) return OpStatus::Pending;
  TWINSCALE_ASSERT(queue.front() == index, "a communicator's ops completed out of issue order");
  queue.pop_front();
  d.timing[index].end_s = d.now();
  d.timing[index].valid = true;
  const bool ok = !d.options.verify || d.verify(index);
  if (!ok)
    std::fprintf(stderr, "twinscale run: rank %lld: op %u (%s on %s) received wrong data\n",
                 static_cast<long long>(d.rank), index, std::string(to_string(op.kind)).c_str(),
                 std::string(to_string(op.group)).c_str());
  d.give(st.send);
  d.give(st.recv);
  return ok ? OpStatus::Done : OpStatus::Failed;
}

void CpuDevice::wait_for_progress(double max_wait_s) {
  Impl& d = *impl_;
  std::unique_lock lock(d.mutex);
  d.done_cv.wait_for(lock, std::chrono::duration<double>(max_wait_s),
                     [&] { return d.completions != d.seen_completions; });
  d.seen_completions = d.completions;
}

std::vector<DeviceOpTiming> CpuDevice::timings() {
  Impl& d = *impl_;
  // The compute thread writes timing[] before publishing done; take the lock so
  // every write it made is visible here.
  std::lock_guard lock(d.mutex);
  return d.timing;
}

void CpuDevice::abort() {
  Impl& d = *impl_;
  d.stop_workers();
  // Outstanding MPI requests towards dead or hung peers are abandoned (not freed: a
  // request of a non-blocking collective cannot be cancelled).
  for (auto& st : d.comm)
    if (st) (void)st.release();
}

double CpuDevice::now_s() const { return impl_->now(); }

} // namespace twinscale::backend
