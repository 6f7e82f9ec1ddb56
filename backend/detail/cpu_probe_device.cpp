#include "backend/detail/cpu_probe_device.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <thread>
#include <unistd.h>

#include "backend/detail/cache_flush.hpp"
#include "backend/detail/cpu_kernels.hpp"
#include "backend/detail/mpi_groups.hpp"
#include "backend/detail/probe_replay.hpp"
#include "backend/detail/probe_util.hpp"

namespace twinscale::backend::detail {

using schedules::Op;
using schedules::OpKind;
using schedules::Schedule;

namespace {

void check(int rc, const char* what) { check_mpi(rc, "probe", what); }

/// The CPU device's side of the probe: fp32 kernels of CpuKernels at the shapes
/// divided by the shape divisor, MPI transfers of fp32 elements.
class CpuProbeDevice final : public ProbeDevice {
public:
  CpuProbeDevice(const Schedule& schedule, const ProbeOptions& options, int rank, int world)
      : s_(schedule), o_(options), rank_(rank), world_(world) {
    if (rank == 0 && !cache_flush_supported())
      std::fprintf(stderr, "twinscale probe: this architecture has no user-level cache flush: transfers are timed on "
                           "warm buffers, faster than a run's (docs/backend.md \"Probe\")\n");
  }

  std::string source() const override { return "cpu"; }
  std::string device_tag(int world) const override {
    char host[256] = "localhost";
    ::gethostname(host, sizeof host - 1);
    return std::string("cpu:") + host + " (" + std::to_string(world) + " ranks)";
  }
  schedules::DType dtype(const Op&) const override { return schedules::DType::FP32; }
  const char* element_type() const override { return "float"; }
  double element_bytes() const override { return 4; }

  /// Replays the program's compute ops as a run executes them: the real executor on a
  /// real CPU device, communication left out (detail/probe_replay.hpp) — one worker
  /// thread per stream on reused buffers (an op finds the caches as its predecessor left
  /// them), issued by the executor's thread, which idles between completions beside the
  /// worker; a fresh device with its warm start each repetition (the data of one
  /// iteration, not of many — repeated passes over the same buffers drift into denormal
  /// values). Sources in docs/backend.md "Probe": timed one op at a time on separate
  /// buffers, small memory-bound ops came out 20 % to 4× slower than in runs; replayed
  /// on the probe's own thread after idle waits, GEMMs came out ~9 % faster than in runs.
  /// The ranks of one host replay in turns of at most as many as it has cores (between
  /// world barriers), so every kernel is timed on a core of its own: all at once, 4 ranks
  /// on 2 cores measured GEMMs 3× slower than a pipeline's run, where most ranks wait
  /// while one computes (ranks sharing cores is not in the model).
  std::vector<double> replay(const schedules::Program& program) override {
    if (!groups_) {
      compute_ = compute_only(s_, original_);
      groups_ =
          std::make_unique<MpiGroups>(s_.layout, rank_, MPI_COMM_WORLD, GroupInit::Local, s_.job.model.experts > 0);
      replay_turns();
    }
    Replay r;
    for (int t = 0; t < turns_; ++t) {
      if (t == turn_) // the device's start barrier is this turn's first world barrier
        r = replay_like_run(compute_, original_, rank_, *groups_, o_.shape_divisor, o_.max_buffer_bytes);
      else
        idle_barrier();
      idle_barrier(); // the turn is over on every rank
    }
    hand_off_.insert(hand_off_.end(), r.hand_off_s.begin(), r.hand_off_s.end());
    std::vector<double> times(program.ops.size(), -1);
    for (const ReplayedOp& x : r.ops) times[x.op] = x.seconds;
    return times;
  }

  /// The executor → worker hand-off between consecutive compute ops of the replays
  /// (median, mean over ranks; collective).
  double hand_off_s() {
    double mine = median_of(hand_off_), sum = 0;
    check(MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce of the hand-off");
    return sum / world_;
  }

  void open_groups(const std::set<int64_t>& sizes) override {
    for (int64_t n : sizes) {
      if (comms_.count(n)) continue;
      const int groups = world_ / static_cast<int>(n);
      const bool member = rank_ < groups * n;
      MPI_Comm c = MPI_COMM_NULL;
      check(MPI_Comm_split(MPI_COMM_WORLD, member ? rank_ / static_cast<int>(n) : MPI_UNDEFINED, rank_, &c),
            "MPI_Comm_split");
      comms_[n] = c;
    }
  }

  /// Out of the caches: a run's device posts a transfer on pooled buffers that the
  /// compute since their last use has evicted (its gradient all-reduce of 6.9 MB took
  /// 5.2–5.9 ms in runs, 4.3–4.6 ms with its buffers touched just before, and the probe
  /// measured 3.5–4.2 ms on its warm buffers: docs/backend.md "Probe"). The buffers are
  /// first touched at their size, as the device's pool is at its start.
  void prepare_transfer(OpKind kind, int64_t n, double bytes) override {
    const int64_t floats = static_cast<int64_t>(std::ceil(bytes / 4.0));
    const int64_t per = std::max<int64_t>(1, (floats + n - 1) / n);
    int64_t send = floats, recv = floats; // all-reduce, broadcast, point to point
    if (kind == OpKind::AllGather) send = per, recv = per * n;
    if (kind == OpKind::ReduceScatter) send = per * n, recv = per;
    if (kind == OpKind::AllToAll) send = recv = per * n;
    for (auto [v, e] : {std::pair{&send_, send}, std::pair{&recv_, recv}}) {
      if (static_cast<int64_t>(v->size()) < e) v->assign(static_cast<size_t>(e), 0.0f);
      flush_from_caches(v->data(), static_cast<size_t>(e) * sizeof(float));
    }
  }
  bool host_progressed() const override { return true; }

  Transfer transfer(OpKind kind, int64_t n, double bytes) override {
    Transfer t;
    const MPI_Comm c = comms_.at(n);
    const int64_t floats = static_cast<int64_t>(std::ceil(bytes / 4.0));
    const int64_t per = std::max<int64_t>(1, (floats + n - 1) / n);
    last_ = {};
    if (c != MPI_COMM_NULL) {
      run_once(kind, n, rank_ % static_cast<int>(n), floats, per, c);
      last_ = {kind, n, rank_ % static_cast<int>(n), per, true};
    }
    return t;
  }

  /// Counts what the last transfer received wrong: every element (outside its time).
  int64_t check_transfer() override {
    if (!last_.valid) return 0;
    const LastTransfer l = last_;
    last_ = {};
    const int64_t n = l.n, per = l.per;
    const int me = l.me;
    const float sum = static_cast<float>(n * (n + 1) / 2);
    int64_t bad = 0;
    auto count_wrong = [&](auto expected) {
      for (size_t i = 0; i < recv_.size(); ++i)
        if (recv_[i] != expected(i)) ++bad;
    };
    switch (l.kind) {
    case OpKind::AllReduce:
    case OpKind::ReduceScatter: count_wrong([&](size_t) { return sum; }); break;
    case OpKind::AllGather:
      count_wrong([&](size_t i) { return static_cast<float>(i / static_cast<size_t>(per) + 1); });
      break;
    case OpKind::AllToAll:
      count_wrong([&](size_t i) { return static_cast<float>((i / static_cast<size_t>(per)) * 1000 + me); });
      break;
    case OpKind::Broadcast: count_wrong([&](size_t) { return 7.0f; }); break;
    default:
      if (me <= 1) count_wrong([&](size_t) { return 3.0f; }); // point to point: members 0 and 1
    }
    return bad;
  }

  void close_groups() override {
    for (auto& [n, c] : comms_)
      if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    comms_.clear();
  }

private:
  /// One transfer on `comm` (member `me` of `n`); check_transfer() then counts what
  /// arrived wrong, outside the timed region.
  void run_once(OpKind kind, int64_t n, int me, int64_t floats, int64_t per, MPI_Comm comm) {
    // Buffers reused from the previous transfer (warm, as the CPU device's pool), filled
    // inside the timed region, as the device's post() does.
    const float mine = static_cast<float>(me + 1);
    const int ni = static_cast<int>(per);
    MPI_Request req = MPI_REQUEST_NULL;
    switch (kind) {
    case OpKind::AllReduce:
      send_.assign(static_cast<size_t>(floats), mine);
      recv_.assign(static_cast<size_t>(floats), 0);
      check(MPI_Iallreduce(send_.data(), recv_.data(), static_cast<int>(floats), MPI_FLOAT, MPI_SUM, comm, &req),
            "MPI_Iallreduce");
      complete(req);
      break;
    case OpKind::AllGather:
      send_.assign(static_cast<size_t>(per), mine);
      recv_.assign(static_cast<size_t>(per * n), 0);
      check(MPI_Iallgather(send_.data(), ni, MPI_FLOAT, recv_.data(), ni, MPI_FLOAT, comm, &req), "MPI_Iallgather");
      complete(req);
      break;
    case OpKind::ReduceScatter:
      send_.assign(static_cast<size_t>(per * n), mine);
      recv_.assign(static_cast<size_t>(per), 0);
      check(MPI_Ireduce_scatter_block(send_.data(), recv_.data(), ni, MPI_FLOAT, MPI_SUM, comm, &req),
            "MPI_Ireduce_scatter_block");
      complete(req);
      break;
    case OpKind::AllToAll:
      send_.resize(static_cast<size_t>(per * n));
      for (int64_t j = 0; j < n; ++j) std::fill_n(send_.begin() + j * per, per, static_cast<float>(me * 1000 + j));
      recv_.assign(static_cast<size_t>(per * n), 0);
      check(MPI_Ialltoall(send_.data(), ni, MPI_FLOAT, recv_.data(), ni, MPI_FLOAT, comm, &req), "MPI_Ialltoall");
      complete(req);
      break;
    case OpKind::Broadcast:
      recv_.assign(static_cast<size_t>(floats), me == 0 ? 7.0f : 0.0f);
      check(MPI_Ibcast(recv_.data(), static_cast<int>(floats), MPI_FLOAT, 0, comm, &req), "MPI_Ibcast");
      complete(req);
      break;
    default: { // point to point: half a ping-pong between members 0 and 1
      if (me > 1) break;
      send_.assign(static_cast<size_t>(floats), 3.0f);
      recv_.assign(static_cast<size_t>(floats), 0);
      const int peer = 1 - me, count = static_cast<int>(floats);
      if (me == 0) {
        check(MPI_Isend(send_.data(), count, MPI_FLOAT, peer, 1, comm, &req), "MPI_Isend");
        complete(req);
        check(MPI_Irecv(recv_.data(), count, MPI_FLOAT, peer, 2, comm, &req), "MPI_Irecv");
        complete(req);
      } else {
        check(MPI_Irecv(recv_.data(), count, MPI_FLOAT, peer, 1, comm, &req), "MPI_Irecv");
        complete(req);
        check(MPI_Isend(send_.data(), count, MPI_FLOAT, peer, 2, comm, &req), "MPI_Isend");
        complete(req);
      }
      // The caller times the whole exchange; a one-way message is half of it.
    }
    }
  }

  /// This rank's turn of the replay and the number of turns (collective): the ranks of
  /// one host (MPI_COMM_TYPE_SHARED) go in turns of std::thread::hardware_concurrency.
  void replay_turns() {
    MPI_Comm local = MPI_COMM_NULL;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
          "MPI_Comm_split_type");
    int me = 0, n = 1, most = 1;
    MPI_Comm_rank(local, &me);
    MPI_Comm_size(local, &n);
    MPI_Comm_free(&local);
    check(MPI_Allreduce(&n, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce of ranks per host");
    const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    turn_ = me / cores;
    turns_ = (most + cores - 1) / cores;
  }

  /// A world barrier completed between idle waits (as the device's start barrier).
  void idle_barrier() {
    MPI_Request req = MPI_REQUEST_NULL;
    check(MPI_Ibarrier(MPI_COMM_WORLD, &req), "MPI_Ibarrier");
    complete(req);
  }

  /// As the CPU device completes a posted transfer: MPI progresses it only when tested,
  /// and the executor tests between short idle waits.
  void complete(MPI_Request& req) {
    for (int done = 0;;) {
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) return;
      std::this_thread::sleep_for(std::chrono::microseconds(o_.nap_us));
    }
  }

  const Schedule& s_;
  const ProbeOptions& o_;
  int rank_, world_;
  std::vector<float> send_, recv_;
  struct LastTransfer { // what check_transfer() checks
    OpKind kind = OpKind::Send;
    int64_t n = 0;
    int me = 0;
    int64_t per = 0;
    bool valid = false;
  } last_;
  std::map<int64_t, MPI_Comm> comms_; // group size → this rank's communicator
  // The replay: the compute-only schedule, its op numbering, the communicators a CPU
  // device needs, this rank's turn, the hand-offs seen.
  schedules::Schedule compute_;
  std::vector<std::vector<uint32_t>> original_;
  std::unique_ptr<MpiGroups> groups_;
  int turn_ = 0, turns_ = 1;
  std::vector<double> hand_off_;
};

} // namespace

std::unique_ptr<ProbeDevice> make_cpu_probe_device(const Schedule& schedule, const ProbeOptions& options, int rank,
                                                   int world) {
  return std::make_unique<CpuProbeDevice>(schedule, options, rank, world);
}

std::optional<double> cpu_hand_off_s(ProbeDevice& device) {
  if (auto* cpu = dynamic_cast<CpuProbeDevice*>(&device)) return cpu->hand_off_s();
  return std::nullopt;
}

} // namespace twinscale::backend::detail
