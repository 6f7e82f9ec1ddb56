#include "backend/probe.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include <mpi.h>

#include "backend/cuda/cuda_probe.hpp"
#include "backend/detail/cpu_probe_device.hpp"
#include "backend/detail/probe_util.hpp"
#include "backend/error.hpp"
#include "backend/probe_device.hpp"
#include "common/progress.hpp"
#include "schedules/error.hpp"
#include "schedules/memory.hpp"

namespace twinscale::backend {

using schedules::Kernel;
using schedules::Op;
using schedules::OpKind;
using schedules::Schedule;

namespace {

using detail::median_of;
using detail::steady_s;

void check(int rc, const char* what) { detail::check_mpi(rc, "probe", what); }

/// A compute op of the schedule as the device executes it.
using KernelKey = std::tuple<int, std::array<int64_t, 4>, std::string>;
/// A communication as the device executes it: kind, group size, executed bytes.
using CommKey = std::tuple<int, int64_t, double>;

/// The (kind, group size, executed bytes) of every transfer of `schedule` (a receive is
/// its send's).
void add_comms(const Schedule& schedule, int64_t shape_divisor, std::set<CommKey>& out) {
  for (const auto& p : schedule.programs)
    for (const Op& op : p.ops) {
      if (!op.is_communication() || op.kind == OpKind::Recv) continue;
      const int64_t n = op.kind == OpKind::Send ? 2 : schedule.layout.group_size(op.group);
      if (n < 2) continue;
      out.insert({static_cast<int>(op.kind), n, schedules::executed_bytes(op.bytes, shape_divisor)});
    }
}

std::string op_name(const Schedule& s, const Op& op) { return op.name < s.names.size() ? s.names[op.name] : ""; }

class Prober {
public:
  Prober(const Schedule& schedule, const ProbeOptions& options, ProbeDevice& device, int rank, int world)
      : s_(schedule), o_(options), dev_(device), rank_(rank), world_(world) {}

  /// Completes `req` testing between idle waits (nap_us), as the CPU device does.
  void idle_complete(MPI_Request& req) const {
    for (int done = 0;;) {
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) return;
      std::this_thread::sleep_for(std::chrono::microseconds(o_.nap_us));
    }
  }

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
    Progress progress("probe kernel replays", rank_ == 0 ? o_.warmup + o_.repetitions : 0, "replays");
    for (int r = -o_.warmup; r < o_.repetitions; ++r) {
      const std::vector<double> times = dev_.replay(program);
      progress.update(r + o_.warmup + 1);
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
    add_comms(s_, o_.shape_divisor, out);
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
    std::vector<int> late; // per time: the group member that arrived last (-1: none was held back)

    /// What the point measured: its times, or, where the late member was rotated, the
    /// median time of each late member (the calibration's median over these is then an
    /// average over arrival orders, not the time of the order that came up most).
    std::vector<double> figures() const {
      std::map<int, std::vector<double>> by_late;
      for (size_t i = 0; i < times.size(); ++i) by_late[i < late.size() ? late[i] : -1].push_back(times[i]);
      if (by_late.size() <= 1) return times;
      std::vector<double> out;
      for (const auto& [member, t] : by_late) out.push_back(median_of(t));
      return out;
    }
  };

  /// Times every point on groups of `n` consecutive ranks, all groups at once, between
  /// barriers. Repetitions go in rounds over all points (as the kernels): a burst of load
  /// on a shared machine spreads over every size instead of spoiling one.
  void time_comms(std::vector<CommPoint>& points) {
    std::set<int64_t> sizes;
    for (const CommPoint& pt : points) sizes.insert(pt.n);
    dev_.open_groups(sizes);
    std::vector<int64_t> bad(points.size(), 0);
    // A device progressed by its host threads (the CPU device): in a run one member of a
    // collective arrives last while the others idle between tests, and the collective's
    // time depends on which one (a 4-byte all-reduce over 2 ranks: 0.3 ms when its root
    // arrived last, 0.56 ms when the other member did — each protocol round waits for a
    // test on its receiver: docs/backend.md "Probe"). Each repetition one member of every
    // group (round r: member r mod n) starts 2–3 idle waits after the others (more than
    // the barrier's own spread of up to one), at a seeded phase of their idle waits; the
    // time is then from its start. On one host only: across hosts the driver times a
    // transfer by the slowest member's own clock.
    const bool stagger = dev_.host_progressed() && one_host_;
    // Each round visits the points in another order (one seed per round: the same order
    // on every rank), so no point always follows the same one — a schedule's 4-byte
    // all-reduce placed after the largest sweep transfer measured 5.6–7.9 ms, the 8-byte
    // sweep point 0.4 ms.
    std::vector<size_t> order(points.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    // rank 0 reports for all: every rank goes through the same rounds
    Progress progress("probe transfers",
                      rank_ == 0 ? static_cast<int64_t>(points.size()) * (o_.warmup + o_.repetitions) : 0, "transfers");
    int64_t timed = 0;
    for (int r = 0; r < o_.warmup + o_.repetitions; ++r) {
      std::mt19937 shuffle(static_cast<uint32_t>(r) + 1);
      for (size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[shuffle() % k]);
      for (size_t k : order) {
        CommPoint& pt = points[k];
        dev_.prepare_transfer(pt.kind, pt.n, pt.bytes);
        // Barrier and time exchange non-blocking, tested between idle waits like the
        // CPU device's transfers: a blocking MPI call busy-polls, and on a shared core
        // the next idle wait of a process that spun its slice comes back late
        // (docs/backend.md "Probe").
        MPI_Request sync = MPI_REQUEST_NULL;
        check(MPI_Ibarrier(MPI_COMM_WORLD, &sync), "MPI_Ibarrier");
        idle_complete(sync);
        int late = -1;
        if (stagger && pt.kind != OpKind::Send && pt.n > 1) {
          late = r % static_cast<int>(pt.n);
          std::mt19937 phase(static_cast<uint32_t>(r) * 7919u + static_cast<uint32_t>(k));
          const auto u = static_cast<int>(phase() % static_cast<uint32_t>(o_.nap_us + 1));
          if (rank_ < world_ / pt.n * pt.n && rank_ % pt.n == late)
            std::this_thread::sleep_for(std::chrono::microseconds(2 * o_.nap_us + u));
        }
        const double t0 = steady_s();
        const ProbeDevice::Transfer tr = dev_.transfer(pt.kind, pt.n, pt.bytes);
        const double t1 = steady_s();
        // Checked after the timed region, as the run's device verifies after an op's end.
        bad[k] += tr.wrong + dev_.check_transfer();
        double mine[4] = {t0, t1, t1 - t0, tr.device_s}, latest[4] = {0, 0, 0, 0};
        check(MPI_Iallreduce(mine, latest, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &sync), "MPI_Iallreduce of a time");
        idle_complete(sync);
        // The transfer's time once its last member arrived (the simulator's: a collective
        // starts when every member has issued it, waiting for late peers is the
        // schedule's): last end − last start, on one host's shared clock. A rank leaving
        // the barrier late (descheduled on a loaded machine) no longer adds its delay.
        // Across hosts the clocks differ: the slowest rank's own time. A device that
        // times transfers itself (CUDA events on the transfer's stream): the slowest
        // member's time.
        const double host = one_host_ ? latest[1] - latest[0] : latest[2];
        if (r >= o_.warmup) {
          pt.times.push_back(latest[3] >= 0 ? latest[3] : host);
          pt.late.push_back(late);
        }
        progress.update(++timed);
      }
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

/// The transfers of the job's other pipeline/data-parallel splits of this world (same tp
/// and cp, every pp dividing world / (tp·cp)), so that a prediction for another split
/// finds its collectives measured at their own sizes instead of interpolated between sweep
/// points: on this machine's MPI a 6.9 MB two-rank all-reduce took 5.4–5.7 ms where the
/// sweep's 2 MB and 8.4 MB points interpolate to 4.6 ms (experiments/twin_check/README.md).
/// Splits the lowering refuses (layers, batch or virtual stages not divisible) are not
/// runnable and are left out; memory is not checked (the probe's job already is).
std::set<std::tuple<int, int64_t, double>> other_split_comms(const Schedule& schedule, int64_t shape_divisor) {
  std::set<CommKey> out;
  const schedules::ParallelSpec& par = schedule.job.parallel;
  const int64_t ranks = schedule.world() / (par.tp * par.cp); // tp, cp ≥ 1 (validated)
  schedules::LoweringTarget target;
  target.check_memory = false;
  for (int64_t pp = 1; pp <= ranks; ++pp) {
    if (ranks % pp != 0 || pp == par.pp) continue;
    schedules::JobSpec job = schedule.job;
    job.parallel.pp = pp;
    job.parallel.dp = ranks / pp;
    try {
      add_comms(schedules::lower(job, target), shape_divisor, out);
    } catch (const schedules::JobError&) {
      // not a split this job can run
    }
  }
  return out;
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
    device = detail::make_cpu_probe_device(schedule, options, rank, world);
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
  if (const std::optional<double> hand_off = detail::cpu_hand_off_s(*device)) {
    res.hand_off_s = *hand_off;
    if (world >= 2) res.overlap = measure_overlap(schedule, options, rank, world);
  }

  std::set<CommKey> comms = p.schedule_comms();
  if (options.other_splits) comms.merge(other_split_comms(schedule, options.shape_divisor));
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
      for (double b : sweep_sizes(max_sweep)) points.push_back({static_cast<OpKind>(kind), n, b, true, {}, 0, {}});
    for (const auto& [kind, n, bytes] : comms)
      points.push_back({static_cast<OpKind>(kind), n, bytes, false, {}, 0, {}});
    p.time_comms(points);
  }
  for (const Prober::CommPoint& pt : points) {
    if (rank != 0) break;
    const double one_way = pt.kind == OpKind::Send ? 0.5 : 1.0; // half a ping-pong
    const std::vector<double> figures = pt.figures();
    for (double x : figures) builder.add_comm_sample(pt.kind, pt.n, pt.bytes, x * one_way, p.hosts_spanned(pt.n));
    if (!pt.row) continue;
    SweepRow r;
    r.kind = pt.kind;
    r.group_size = pt.n;
    r.bytes = pt.bytes;
    r.type = device->element_type();
    r.count = static_cast<int64_t>(std::ceil(pt.bytes / device->element_bytes()));
    r.seconds = median_of(figures) * one_way;
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
                         ? cpu_cluster_toml(world, m.p2p_latency_s, m.p2p_bandwidth > 0 ? m.p2p_bandwidth : 1e9, m.host,
                                            res.overlap, res.hand_off_s)
                         : gpu_cluster_toml(m, device->gpu_name());
  return res;
}

void finalize_probe() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::string sweep_table(const std::vector<SweepRow>& rows) {
  // nccl-tests' layout, one block per collective and group size (the rows come grouped):
  // size count type redop root | time algbw busbw #wrong, out-of-place only (the probe
  // times no in-place run), each block closed by its average bus bandwidth.
  std::string out;
  char buf[256];
  double sum_busbw = 0;
  int64_t in_block = 0;
  auto close_block = [&] {
    if (in_block == 0) return;
    std::snprintf(buf, sizeof buf, "# Avg bus bandwidth    : %g \n", sum_busbw / static_cast<double>(in_block));
    out += buf;
    sum_busbw = 0;
    in_block = 0;
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const SweepRow& r = rows[i];
    const std::string kind(schedules::to_string(r.kind));
    if (i == 0 || r.kind != rows[i - 1].kind || r.group_size != rows[i - 1].group_size) {
      close_block();
      std::snprintf(buf, sizeof buf, "#\n# %s over %lld ranks (out-of-place; no in-place run is timed)\n", kind.c_str(),
                    static_cast<long long>(r.group_size));
      out += buf;
      std::snprintf(buf, sizeof buf, "#%14s %12s %8s %6s %6s %10s %8s %8s %6s\n", "size", "count", "type", "redop",
                    "root", "time", "algbw", "busbw", "#wrong");
      out += buf;
      std::snprintf(buf, sizeof buf, "#%14s %12s %8s %6s %6s %10s %8s %8s %6s\n", "(B)", "(elements)", "", "", "",
                    "(us)", "(GB/s)", "(GB/s)", "");
      out += buf;
    }
    const bool reduces = r.kind == schedules::OpKind::AllReduce || r.kind == schedules::OpKind::ReduceScatter;
    std::snprintf(buf, sizeof buf, "%15.0f %12lld %8s %6s %6d %10.2f %8.4f %8.4f %6lld\n", r.bytes,
                  static_cast<long long>(r.count), r.type.c_str(), reduces ? "sum" : "none",
                  r.kind == schedules::OpKind::Broadcast ? 0 : -1, r.seconds * 1e6, r.algbw_bytes_per_s / 1e9,
                  r.busbw_bytes_per_s / 1e9, static_cast<long long>(r.wrong));
    out += buf;
    sum_busbw += r.busbw_bytes_per_s / 1e9;
    ++in_block;
  }
  close_block();
  return out;
}

} // namespace twinscale::backend
