#include "backend/probe.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <tuple>

#include <mpi.h>
#include <unistd.h>

#include "backend/cuda/cuda_probe.hpp"
#include "backend/detail/cpu_kernels.hpp"
#include "backend/error.hpp"
#include "backend/probe_device.hpp"
#include "schedules/memory.hpp"

namespace twinscale::backend {

using schedules::Kernel;
using schedules::Op;
using schedules::OpKind;
using schedules::Schedule;

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS)
    throw BackendError(std::string("probe: ") + what + " failed (MPI error " + std::to_string(rc) + ")");
}

/// A compute op of the schedule as the device executes it.
using KernelKey = std::tuple<int, std::array<int64_t, 4>, std::string>;
/// A communication as the device executes it: kind, group size, executed bytes.
using CommKey = std::tuple<int, int64_t, double>;

std::string op_name(const Schedule& s, const Op& op) { return op.name < s.names.size() ? s.names[op.name] : ""; }

/// The CPU device's side of the probe: fp32 kernels of detail::CpuKernels at the shapes
/// divided by the shape divisor, MPI transfers of fp32 elements.
class CpuProbeDevice final : public ProbeDevice {
public:
  CpuProbeDevice(const Schedule& schedule, const ProbeOptions& options, int rank, int world)
      : s_(schedule), o_(options), rank_(rank), world_(world) {}

  std::string source() const override { return "cpu"; }
  std::string device_tag(int world) const override {
    char host[256] = "localhost";
    ::gethostname(host, sizeof host - 1);
    return std::string("cpu:") + host + " (" + std::to_string(world) + " ranks)";
  }
  schedules::DType dtype(const Op&) const override { return schedules::DType::FP32; }
  const char* element_type() const override { return "float"; }
  double element_bytes() const override { return 4; }

  /// Replays the program's compute ops in program order, on one set of kernels (and
  /// buffers) per stream, as the CPU device's workers run them in a run: an op finds the
  /// caches as its predecessor left them. (Timed one by one in rounds on separate
  /// buffers after an idle wait, the small memory-bound ops — residual adds, LayerNorm
  /// passes, 3–20 µs — came out 20 % to 4× slower than in runs.) Every repetition
  /// starts from fresh kernels warmed by one untimed run of each distinct op, as a run's
  /// device starts (CpuDevice's warm start): the data of one iteration, not of many —
  /// repeated passes over the same buffers drift into denormal values, and a GEMM on
  /// them ran 10× slower.
  std::vector<double> replay(const schedules::Program& program) override {
    std::array<std::unique_ptr<detail::CpuKernels>, schedules::kStreamCount> streams;
    std::set<std::pair<size_t, KernelKey>> warm;
    for (const Op& op : program.ops) {
      if (op.is_communication()) continue;
      const KernelKey key{static_cast<int>(op.kernel), schedules::executed_shape(op, o_.shape_divisor),
                          op_name(s_, op)};
      auto& kernels = streams[static_cast<size_t>(op.stream)];
      if (!kernels) kernels = std::make_unique<detail::CpuKernels>(o_.max_buffer_bytes);
      if (warm.insert({static_cast<size_t>(op.stream), key}).second) kernels->run(op, std::get<1>(key));
    }
    std::vector<double> times(program.ops.size(), -1);
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      if (op.is_communication()) continue;
      // As in a run, where the device's worker waits for each op to be issued: the
      // kernel starts after a short sleep, not in a long busy streak (on a loaded
      // machine the scheduler preempts a busy streak: GEMMs measured 2–3× slower).
      std::this_thread::sleep_for(std::chrono::microseconds(o_.nap_us));
      const double t0 = now_s();
      streams[static_cast<size_t>(op.stream)]->run(op, schedules::executed_shape(op, o_.shape_divisor));
      times[i] = now_s() - t0;
    }
    return times;
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

  Transfer transfer(OpKind kind, int64_t n, double bytes) override {
    Transfer t;
    const MPI_Comm c = comms_.at(n);
    const int64_t floats = static_cast<int64_t>(std::ceil(bytes / 4.0));
    const int64_t per = std::max<int64_t>(1, (floats + n - 1) / n);
    if (c != MPI_COMM_NULL) t.wrong = run_once(kind, n, rank_ % static_cast<int>(n), floats, per, c);
    return t;
  }

  void close_groups() override {
    for (auto& [n, c] : comms_)
      if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    comms_.clear();
  }

private:
  /// One transfer on `comm` (member `me` of `n`); returns the elements that arrived wrong.
  int64_t run_once(OpKind kind, int64_t n, int me, int64_t floats, int64_t per, MPI_Comm comm) {
    // Fresh buffers, filled inside the timed region, as the CPU device's post() does.
    send_ = {};
    recv_ = {};
    const float mine = static_cast<float>(me + 1);
    const float sum = static_cast<float>(n * (n + 1) / 2);
    int64_t bad = 0;
    auto count_wrong = [&](const std::vector<float>& v, auto expected) {
      for (size_t i = 0; i < v.size(); ++i)
        if (v[i] != expected(i)) ++bad;
    };
    const int ni = static_cast<int>(per);
    MPI_Request req = MPI_REQUEST_NULL;
    switch (kind) {
    case OpKind::AllReduce:
      send_.assign(static_cast<size_t>(floats), mine);
      recv_.assign(static_cast<size_t>(floats), 0);
      check(MPI_Iallreduce(send_.data(), recv_.data(), static_cast<int>(floats), MPI_FLOAT, MPI_SUM, comm, &req),
            "MPI_Iallreduce");
      complete(req);
      count_wrong(recv_, [&](size_t) { return sum; });
      break;
    case OpKind::AllGather:
      send_.assign(static_cast<size_t>(per), mine);
      recv_.assign(static_cast<size_t>(per * n), 0);
      check(MPI_Iallgather(send_.data(), ni, MPI_FLOAT, recv_.data(), ni, MPI_FLOAT, comm, &req), "MPI_Iallgather");
      complete(req);
      count_wrong(recv_, [&](size_t i) { return static_cast<float>(i / static_cast<size_t>(per) + 1); });
      break;
    case OpKind::ReduceScatter:
      send_.assign(static_cast<size_t>(per * n), mine);
      recv_.assign(static_cast<size_t>(per), 0);
      check(MPI_Ireduce_scatter_block(send_.data(), recv_.data(), ni, MPI_FLOAT, MPI_SUM, comm, &req),
            "MPI_Ireduce_scatter_block");
      complete(req);
      count_wrong(recv_, [&](size_t) { return sum; });
      break;
    case OpKind::AllToAll:
      send_.resize(static_cast<size_t>(per * n));
      for (int64_t j = 0; j < n; ++j) std::fill_n(send_.begin() + j * per, per, static_cast<float>(me * 1000 + j));
      recv_.assign(static_cast<size_t>(per * n), 0);
      check(MPI_Ialltoall(send_.data(), ni, MPI_FLOAT, recv_.data(), ni, MPI_FLOAT, comm, &req), "MPI_Ialltoall");
      complete(req);
      count_wrong(recv_, [&](size_t i) { return static_cast<float>((i / static_cast<size_t>(per)) * 1000 + me); });
      break;
    case OpKind::Broadcast:
      recv_.assign(static_cast<size_t>(floats), me == 0 ? 7.0f : 0.0f);
      check(MPI_Ibcast(recv_.data(), static_cast<int>(floats), MPI_FLOAT, 0, comm, &req), "MPI_Ibcast");
      complete(req);
      count_wrong(recv_, [&](size_t) { return 7.0f; });
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
      count_wrong(recv_, [&](size_t) { return 3.0f; });
    }
    }
    return bad;
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
  std::map<int64_t, MPI_Comm> comms_; // group size → this rank's communicator
};

class Prober {
public:
  Prober(const Schedule& schedule, const ProbeOptions& options, ProbeDevice& device, int rank, int world)
      : s_(schedule), o_(options), dev_(device), rank_(rank), world_(world) {}

  void measure_kernels(schedules::CalibrationBuilder& builder) {
    // Every distinct compute op of the schedule, in one order on every rank.
    std::map<KernelKey, const Op*> all;
    for (const auto& p : s_.programs)
      for (const Op& op : p.ops)
        if (!op.is_communication()) all.emplace(key_of(op), &op);
    std::map<KernelKey, size_t> index; // key → its place in `all`
    for (const auto& [key, op] : all) index.emplace(key, index.size());
    // Each rank replays its own program's compute ops in program order on the device
    // (ProbeDevice::replay), warm-up repetitions first. Per repetition and op key, the
    // median of its occurrences; -1: not in this program.
    const size_t reps = static_cast<size_t>(o_.repetitions);
    std::vector<double> samples(all.size() * reps, -1);
    const schedules::Program& program = s_.program(rank_);
    for (int r = -o_.warmup; r < o_.repetitions; ++r) {
      const std::vector<double> times = dev_.replay(program);
      if (r < 0) continue;
      std::vector<std::vector<double>> occurrences(all.size());
      for (size_t i = 0; i < program.ops.size(); ++i)
        if (!program.ops[i].is_communication() && times[i] >= 0)
          occurrences[index.at(key_of(program.ops[i]))].push_back(times[i]);
      for (size_t k = 0; k < all.size(); ++k)
        if (!occurrences[k].empty()) samples[k * reps + static_cast<size_t>(r)] = median_of(occurrences[k]);
    }
    std::vector<double> gathered(rank_ == 0 ? samples.size() * static_cast<size_t>(world_) : 0);
    check(MPI_Gather(samples.data(), static_cast<int>(samples.size()), MPI_DOUBLE, gathered.data(),
                     static_cast<int>(samples.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD),
          "MPI_Gather of kernel times");
    if (rank_ != 0) return;
    size_t k = 0; // every rank's repetitions are samples of one entry (the builder keeps the median)
    for (const auto& [key, op] : all) {
      for (int r = 0; r < world_; ++r)
        for (size_t x = 0; x < reps; ++x) {
          const double v = gathered[static_cast<size_t>(r) * samples.size() + k * reps + x];
          if (v >= 0) builder.add_kernel_sample(op->kernel, dev_.dtype(*op), std::get<1>(key), v, std::get<2>(key));
        }
      ++k;
    }
  }

  /// The schedule's communications as the device executes them.
  std::set<CommKey> schedule_comms() const {
    std::set<CommKey> out;
    for (const auto& p : s_.programs)
      for (const Op& op : p.ops) {
        if (!op.is_communication() || op.kind == OpKind::Recv) continue;
        const int64_t n = op.kind == OpKind::Send ? 2 : s_.layout.group_size(op.group);
        if (n < 2) continue;
        out.insert({static_cast<int>(op.kind), n, schedules::executed_bytes(op.bytes, o_.shape_divisor)});
      }
    return out;
  }

  /// Learns every rank's host (its name; collective over the world).
  void gather_hosts() {
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    check(MPI_Get_processor_name(name, &len), "MPI_Get_processor_name");
    std::vector<char> all(static_cast<size_t>(world_) * MPI_MAX_PROCESSOR_NAME);
    check(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                        MPI_COMM_WORLD),
          "MPI_Allgather of host names");
    host_.clear();
    for (int r = 0; r < world_; ++r) host_.emplace_back(all.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME);
    one_host_ = std::set<std::string>(host_.begin(), host_.end()).size() == 1;
  }

  /// The most hosts one group of `n` consecutive ranks spans (the calibration entry's
  /// span: 1 when every group lies on one host).
  int64_t hosts_spanned(int64_t n) const {
    size_t most = 1;
    for (int64_t g = 0; (g + 1) * n <= static_cast<int64_t>(host_.size()); ++g)
      most = std::max(most, std::set<std::string>(host_.begin() + g * n, host_.begin() + (g + 1) * n).size());
    return static_cast<int64_t>(most);
  }

  /// One communication to time: kind, group size, bytes; its times (every repetition,
  /// seconds: the slowest rank's) and the elements that arrived wrong.
  struct CommPoint {
    OpKind kind = OpKind::Send;
    int64_t n = 2;
    double bytes = 0;
    bool row = false; // a sweep row (else one of the schedule's messages)
    std::vector<double> times;
    int64_t wrong = 0;
  };

  /// Times every point on groups of `n` consecutive ranks, all groups at once, between
  /// barriers. Repetitions go in rounds over all points (as the kernels): a burst of load
  /// on a shared machine spreads over every size instead of spoiling one.
  void time_comms(std::vector<CommPoint>& points) {
    std::set<int64_t> sizes;
    for (const CommPoint& pt : points) sizes.insert(pt.n);
    dev_.open_groups(sizes);
    std::vector<int64_t> bad(points.size(), 0);
    for (int r = 0; r < o_.warmup + o_.repetitions; ++r)
      for (size_t k = 0; k < points.size(); ++k) {
        CommPoint& pt = points[k];
        check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        const double t0 = now_s();
        const ProbeDevice::Transfer tr = dev_.transfer(pt.kind, pt.n, pt.bytes);
        bad[k] += tr.wrong;
        const double t1 = now_s();
        double mine[4] = {t0, t1, t1 - t0, tr.device_s}, latest[4] = {0, 0, 0, 0};
        check(MPI_Allreduce(mine, latest, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce of a time");
        // The transfer's time once its last member arrived (the simulator's: a collective
        // starts when every member has issued it, waiting for late peers is the
        // schedule's): last end − last start, on one host's shared clock. A rank leaving
        // the barrier late (descheduled on a loaded machine) no longer adds its delay.
        // Across hosts the clocks differ: the slowest rank's own time. A device that
        // times transfers itself (CUDA events on the transfer's stream): the slowest
        // member's time.
        const double host = one_host_ ? latest[1] - latest[0] : latest[2];
        if (r >= o_.warmup) pt.times.push_back(latest[3] >= 0 ? latest[3] : host);
      }
    std::vector<int64_t> wrong(points.size(), 0);
    check(MPI_Allreduce(bad.data(), wrong.data(), static_cast<int>(bad.size()), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD),
          "MPI_Allreduce of #wrong");
    for (size_t k = 0; k < points.size(); ++k) points[k].wrong = wrong[k];
    dev_.close_groups();
  }

  /// What the sweeps measured (rank 0's rows), for the device's cluster description.
  MeasuredMachine machine(const std::vector<SweepRow>& rows, double latency_s, double bandwidth) const {
    MeasuredMachine m;
    m.world = world_;
    m.hosts = static_cast<int>(std::set<std::string>(host_.begin(), host_.end()).size());
    for (const std::string& h : host_)
      m.ranks_per_host = std::max(m.ranks_per_host, static_cast<int>(std::count(host_.begin(), host_.end(), h)));
    m.host = host_.empty() ? "localhost" : host_.front();
    m.p2p_latency_s = latency_s;
    m.p2p_bandwidth = bandwidth;
    for (const SweepRow& r : rows)
      if (r.kind != OpKind::Send && hosts_spanned(r.group_size) > 1 && r.busbw_bytes_per_s > m.cross_host_busbw) {
        m.cross_host_busbw = r.busbw_bytes_per_s;
        m.cross_host_group = r.group_size;
      }
    return m;
  }

private:
  KernelKey key_of(const Op& op) const {
    return {static_cast<int>(op.kernel), schedules::executed_shape(op, o_.shape_divisor), op_name(s_, op)};
  }

  const Schedule& s_;
  const ProbeOptions& o_;
  ProbeDevice& dev_;
  int rank_, world_;
  std::vector<std::string> host_; // every rank's host name
  bool one_host_ = false;         // every rank on one host (one steady clock)
};

std::string cluster_toml(int world, double latency_s, double bandwidth, const std::string& host) {
  char buf[2048];
  std::snprintf(buf, sizeof buf,
                "# Measured by `twinscale probe` on %s: %d ranks on one host (the CPU device).\n"
                "# Point-to-point between ranks: one-way latency %.3g s (smallest message), bandwidth\n"
                "# %.4g B/s (the best of the sweep). The cluster format has no intra-server\n"
                "# latency key: the latency lives in the calibration table written with this file,\n"
                "# which also gives every kernel and collective time; simulate with both\n"
                "# (--cluster this --calibration table). The GPU model only fills figures the\n"
                "# table does not cover (its coverage line says how many).\n"
                "name = \"probed-cpu-host\"\n"
                "gpus = %d\n\n"
                "[gpu]\n"
                "model = \"A100-SXM-80GB\"\n"
                "nvlink_bw_bytes_per_s = %.6g # measured point-to-point bandwidth\n"
                "nvlink_efficiency = 1.0\n\n"
                "[server]\n"
                "gpus = %d\n"
                "nics = 1\n"
                "nic = \"custom\"\n"
                "nic_gbit_per_s = %.6g\n"
                "rails = 1\n\n"
                "[switch]\n"
                "model = \"custom\"\n"
                "radix = 8\n"
                "port_gbit_per_s = %.6g\n"
                "latency_ns = %.6g\n\n"
                "[fabric]\n"
                "tiers = 2\n"
                "oversubscription = [1]\n"
                "servers_per_tor = 1\n",
                host.c_str(), world, latency_s, bandwidth, world, bandwidth, world, bandwidth * 8 / 1e9,
                bandwidth * 8 / 1e9, latency_s * 1e9);
  return buf;
}

/// Sweep sizes: 8 B × 4^k up to the first at or above `max_bytes` (no message of the
/// range is beyond the sweep).
std::vector<double> sweep_sizes(double max_bytes) {
  std::vector<double> out{8};
  while (out.back() < max_bytes) out.push_back(out.back() * 4);
  return out;
}

} // namespace

double default_sweep_limit(const Schedule& schedule, int64_t shape_divisor) {
  double largest = 0;
  for (const auto& p : schedule.programs)
    for (const Op& op : p.ops)
      if (op.is_communication()) largest = std::max(largest, schedules::executed_bytes(op.bytes, shape_divisor));
  // Another split moves more per message: with one stage and data parallelism, one
  // data-parallel collective carries every stage's gradients — even when the probed job
  // has none (dp = 1). The sweep reaches twice the whole model's gradients at 4 B per
  // parameter (fp32, the largest gradient type), so no prediction extrapolates in size.
  double whole = 0;
  for (int64_t pp = 0; pp < schedule.layout.pp; ++pp)
    whole += schedules::executed_bytes(4 * schedules::stage_parameters(schedule.job, pp), shape_divisor);
  return std::max({65536.0, 4 * largest, 2 * whole});
}

namespace {

/// Starts MPI if it is not yet and checks the launch against the schedule's world;
/// returns {rank, world}.
std::pair<int, int> start_probe(const Schedule& schedule, const ProbeOptions& options) {
  if (options.shape_divisor < 1)
    throw BackendError("probe: --shape-divisor " + std::to_string(options.shape_divisor) + " must be >= 1");
  if (options.warmup < 0 || options.repetitions < 1)
    throw BackendError("probe: --warmup must be >= 0 and --repetitions >= 1");
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world != schedule.world())
    throw BackendError("probe: the launcher started " + std::to_string(world) + " ranks but the schedule of job \"" +
                       schedule.job.name + "\" needs " + std::to_string(schedule.world()) +
                       " (tp·pp·dp); start it with -np " + std::to_string(schedule.world()));
  return {rank, world};
}

} // namespace

ProbeResult probe(const Schedule& schedule, const ProbeOptions& options) {
  const auto [rank, world] = start_probe(schedule, options);
  std::unique_ptr<ProbeDevice> device;
  if (options.device == "cpu")
    device = std::make_unique<CpuProbeDevice>(schedule, options, rank, world);
  else if (options.device == "cuda")
    device = make_cuda_probe_device(schedule, options, rank, world); // a BackendError without the toolkit
  else
    throw BackendError("probe: --device \"" + options.device + "\": valid values are cpu and cuda");
  return probe(schedule, options, *device);
}

ProbeResult probe(const Schedule& schedule, const ProbeOptions& options, ProbeDevice& dev) {
  const auto [rank, world] = start_probe(schedule, options);
  ProbeDevice* device = &dev;
  ProbeResult res;
  res.rank = rank;
  res.world = world;
  Prober p(schedule, options, *device, rank, world);
  p.gather_hosts();
  schedules::CalibrationBuilder builder;
  p.measure_kernels(builder);

  const std::set<CommKey> comms = p.schedule_comms();
  std::set<std::pair<int, int64_t>> kinds{{static_cast<int>(OpKind::Send), 2}};
  for (int64_t g = 2; g <= world; g *= 2) // any split's gradient all-reduce
    kinds.insert({static_cast<int>(OpKind::AllReduce), g});
  for (const auto& [kind, n, bytes] : comms) {
    kinds.insert({kind, n});
    if (kind == static_cast<int>(OpKind::Send)) continue;
    for (int64_t g = 2; g <= world; g *= 2) kinds.insert({kind, g}); // other splits of the job
  }
  const double max_sweep = options.max_sweep_bytes > 0 ? options.max_sweep_bytes
                                                       : std::min(default_sweep_limit(schedule, options.shape_divisor),
                                                                  device->message_limit());
  std::vector<Prober::CommPoint> points;
  if (world >= 2) {
    for (const auto& [kind, n] : kinds)
      for (double b : sweep_sizes(max_sweep)) points.push_back({static_cast<OpKind>(kind), n, b, true, {}, 0});
    for (const auto& [kind, n, bytes] : comms) points.push_back({static_cast<OpKind>(kind), n, bytes, false, {}, 0});
    p.time_comms(points);
  }
  for (const Prober::CommPoint& pt : points) {
    if (rank != 0) break;
    const double one_way = pt.kind == OpKind::Send ? 0.5 : 1.0; // half a ping-pong
    for (double x : pt.times) builder.add_comm_sample(pt.kind, pt.n, pt.bytes, x * one_way, p.hosts_spanned(pt.n));
    if (!pt.row) continue;
    SweepRow r;
    r.kind = pt.kind;
    r.group_size = pt.n;
    r.bytes = pt.bytes;
    r.type = device->element_type();
    r.count = static_cast<int64_t>(std::ceil(pt.bytes / device->element_bytes()));
    r.seconds = median_of(pt.times) * one_way;
    r.algbw_bytes_per_s = r.seconds > 0 ? pt.bytes / r.seconds : 0;
    r.busbw_bytes_per_s = r.algbw_bytes_per_s * schedules::bus_factor(pt.kind, pt.n);
    r.wrong = pt.wrong;
    res.sweep.push_back(r);
  }
  if (rank != 0) return res;
  res.table = builder.build(device->source(), "");
  res.table.shape_divisor = options.shape_divisor;
  for (const SweepRow& r : res.sweep) { // latency: the smallest message; bandwidth: the best
    if (r.kind != OpKind::Send) continue;
    if (res.p2p_latency_s == 0) res.p2p_latency_s = r.seconds;
    res.p2p_bandwidth_bytes_per_s = std::max(res.p2p_bandwidth_bytes_per_s, r.algbw_bytes_per_s);
  }
  res.table.device = device->device_tag(world);
  const MeasuredMachine m = p.machine(res.sweep, res.p2p_latency_s, res.p2p_bandwidth_bytes_per_s);
  res.cluster_toml = device->gpu_name().empty()
                         ? cluster_toml(world, m.p2p_latency_s, m.p2p_bandwidth > 0 ? m.p2p_bandwidth : 1e9, m.host)
                         : gpu_cluster_toml(m, device->gpu_name());
  return res;
}

void finalize_probe() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::string sweep_table(const std::vector<SweepRow>& rows) {
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "#%13s %12s %6s %-15s %6s %12s %10s %10s %8s\n", "size(B)", "count", "type", "kind",
                "group", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
  out += buf;
  for (const SweepRow& r : rows) {
    std::snprintf(buf, sizeof buf, " %13.0f %12lld %6s %-15s %6lld %12.2f %10.4f %10.4f %8lld\n", r.bytes,
                  static_cast<long long>(r.count), r.type.c_str(), std::string(schedules::to_string(r.kind)).c_str(),
                  static_cast<long long>(r.group_size), r.seconds * 1e6, r.algbw_bytes_per_s / 1e9,
                  r.busbw_bytes_per_s / 1e9, static_cast<long long>(r.wrong));
    out += buf;
  }
  return out;
}

} // namespace twinscale::backend
