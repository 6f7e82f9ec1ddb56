#include "backend/probe_overlap.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <mpi.h>

#include "backend/detail/cpu_kernels.hpp"
#include "backend/detail/probe_util.hpp"
#include "backend/error.hpp"
#include "backend/probe.hpp"
#include "schedules/memory.hpp"

namespace twinscale::backend {

using schedules::Op;
using schedules::OpKind;

namespace {

using detail::median_of;
using detail::steady_s;

void mpi(int rc, const char* what) { detail::check_mpi(rc, "probe (overlap)", what); }

/// The GEMM of the rank's program with the most work (occurrences × FLOPs).
const Op* heaviest_gemm(const schedules::Program& program) {
  std::map<std::array<int64_t, 4>, std::pair<double, const Op*>> work;
  for (const Op& op : program.ops)
    if (op.kind == OpKind::Gemm) {
      auto& [w, first] = work[op.shape];
      w += op.flops;
      if (first == nullptr) first = &op;
    }
  const Op* best = nullptr;
  double most = -1;
  for (const auto& [shape, w] : work)
    if (w.first > most) most = w.first, best = w.second;
  return best;
}

/// The all-reduce to measure: the schedule's largest or the whole model's gradients at
/// 2 B per parameter (BF16, schedules/memory.hpp: the data-parallel all-reduce of a
/// one-stage split of the job), whichever is larger.
double allreduce_bytes(const schedules::Schedule& s, int64_t divisor) {
  double largest = 0;
  for (const auto& p : s.programs)
    for (const Op& op : p.ops)
      if (op.kind == OpKind::AllReduce) largest = std::max(largest, schedules::executed_bytes(op.bytes, divisor));
  double whole = 0;
  for (int64_t pp = 0; pp < s.layout.pp; ++pp)
    whole += schedules::executed_bytes(2 * schedules::stage_parameters(s.job, pp), divisor);
  return std::max({largest, whole, 4.0});
}

class OverlapProbe {
public:
  OverlapProbe(const Op& gemm, std::array<int64_t, 4> shape, double bytes, const ProbeOptions& o)
      : gemm_(gemm), shape_(shape), kernels_(o.max_buffer_bytes), nap_(o.nap_us),
        floats_(static_cast<int64_t>(std::ceil(bytes / 4.0))) {}

  double one_gemm() {
    const double t0 = steady_s();
    kernels_.run(gemm_, shape_);
    return steady_s() - t0;
  }

  /// `count` GEMMs on this thread, each after an idle wait (as the probe's replay) or
  /// back to back.
  void on_main(int count, bool nap, std::vector<double>& out) {
    for (int i = 0; i < count; ++i) {
      if (nap) std::this_thread::sleep_for(std::chrono::microseconds(nap_));
      out.push_back(one_gemm());
    }
  }

  /// `count` GEMMs back to back on a worker thread while this thread idles as the
  /// executor does between polls.
  void on_worker_idle(int count, std::vector<double>& out) {
    std::atomic<bool> done{false};
    std::thread worker([&] {
      for (int i = 0; i < count; ++i) out.push_back(one_gemm());
      done = true;
      cv_.notify_all();
    });
    std::unique_lock lock(mutex_);
    while (!done) cv_.wait_for(lock, std::chrono::microseconds(nap_));
    lock.unlock();
    worker.join();
  }

  /// `count` all-reduces back to back on this thread (MPI_Test between idle waits, as
  /// the CPU device), GEMMs on a worker meanwhile when `compute`; the GEMMs that ran
  /// wholly inside the all-reduces' span are kept.
  void comms(int count, bool compute, std::vector<double>& comm_out, std::vector<double>& gemm_out) {
    std::atomic<bool> stop{false};
    std::vector<std::pair<double, double>> spans;
    std::thread worker;
    if (compute)
      worker = std::thread([&] {
        while (!stop) {
          const double t0 = steady_s();
          kernels_.run(gemm_, shape_);
          spans.emplace_back(t0, steady_s());
        }
      });
    std::vector<float> send(static_cast<size_t>(floats_), 1.0f), recv(static_cast<size_t>(floats_));
    const double begin = steady_s();
    for (int i = 0; i < count; ++i) {
      MPI_Request req = MPI_REQUEST_NULL;
      const double t0 = steady_s();
      mpi(MPI_Iallreduce(send.data(), recv.data(), static_cast<int>(floats_), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req),
          "MPI_Iallreduce");
      for (int done = 0;;) {
        mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (done) break;
        std::unique_lock lock(mutex_);
        cv_.wait_for(lock, std::chrono::microseconds(nap_));
      }
      comm_out.push_back(steady_s() - t0);
    }
    const double end = steady_s();
    stop = true;
    if (worker.joinable()) worker.join();
    for (const auto& [a, b] : spans)
      if (a >= begin && b <= end) gemm_out.push_back(b - a);
  }

private:
  const Op& gemm_;
  std::array<int64_t, 4> shape_;
  detail::CpuKernels kernels_;
  int nap_;
  int64_t floats_;
  std::mutex mutex_;
  std::condition_variable cv_;
};

/// Every rank's value, averaged.
double world_mean(double v, int world) {
  double sum = 0;
  mpi(MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce of a time");
  return sum / world;
}

int world_max(int v) {
  int m = 0;
  mpi(MPI_Allreduce(&v, &m, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce of a count");
  return m;
}

} // namespace

double OverlapFacts::compute_slowdown() const {
  return gemm_worker_s > 0 && gemm_during_comm_s > 0 ? std::max(0.0, gemm_during_comm_s / gemm_worker_s - 1) : 0;
}

double OverlapFacts::comm_slowdown() const {
  return comm_alone_s > 0 && comm_during_compute_s > 0 ? std::max(0.0, comm_during_compute_s / comm_alone_s - 1) : 0;
}

OverlapFacts measure_overlap(const schedules::Schedule& schedule, const ProbeOptions& o, int rank, int world) {
  OverlapFacts f;
  const Op* gemm = heaviest_gemm(schedule.program(rank));
  if (world_max(gemm == nullptr ? 1 : 0) != 0 || world < 2) return f;
  const std::array<int64_t, 4> shape = schedules::executed_shape(*gemm, o.shape_divisor);
  f.comm_bytes = allreduce_bytes(schedule, o.shape_divisor);
  f.group_size = world;
  const uint32_t name = gemm->name;
  f.gemm = (name < schedule.names.size() ? schedule.names[name] : std::string("gemm")) + " " +
           std::to_string(shape[0]) + "x" + std::to_string(shape[1]) + "x" + std::to_string(shape[2]);
  OverlapProbe p(*gemm, shape, f.comm_bytes, o);
  // Warm: buffers allocated and touched, one all-reduce; then the counts that make each
  // phase last about 50 ms (every rank the same).
  for (int i = 0; i < 3; ++i) p.one_gemm();
  std::vector<double> comm_alone, comm_busy, gemm_nap, gemm_b2b, gemm_worker, gemm_busy, unused;
  p.comms(1, false, unused, unused);
  const int gemms = world_max(static_cast<int>(std::clamp(0.05 / std::max(p.one_gemm(), 1e-6), 8.0, 400.0)));
  unused.clear();
  p.comms(1, false, unused, unused);
  const int comms = world_max(static_cast<int>(std::clamp(0.05 / std::max(unused.back(), 1e-6), 4.0, 400.0)));
  const int rounds = std::max(3, o.repetitions / 2);
  for (int r = 0; r < rounds; ++r) { // rounds over the phases: a burst of load spreads over all
    mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    p.on_main(gemms, true, gemm_nap);
    p.on_main(gemms, false, gemm_b2b);
    p.on_worker_idle(gemms, gemm_worker);
    mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    p.comms(comms, false, comm_alone, unused);
    mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    p.comms(comms, true, comm_busy, gemm_busy);
  }
  f.gemm_nap_s = world_mean(median_of(gemm_nap), world);
  f.gemm_back_to_back_s = world_mean(median_of(gemm_b2b), world);
  f.gemm_worker_s = world_mean(median_of(gemm_worker), world);
  f.gemm_during_comm_s = world_mean(median_of(gemm_busy), world);
  f.comm_alone_s = world_mean(median_of(comm_alone), world);
  f.comm_during_compute_s = world_mean(median_of(comm_busy), world);
  return f;
}

std::string overlap_report(const OverlapFacts& f) {
  if (f.group_size == 0) return "overlap: not measured (no GEMM in the rank's program, or one rank)\n";
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "# overlap (medians, mean over ranks): GEMM %s, all-reduce %.0f B over %lld ranks\n"
                "#   GEMM after an idle wait %.1f us, back to back %.1f us, on a worker beside an idle executor "
                "%.1f us, on a worker while all-reduces run %.1f us: compute slowdown %.3f\n"
                "#   all-reduce alone %.1f us, while the worker computes %.1f us: communication slowdown %.3f\n",
                f.gemm.c_str(), f.comm_bytes, static_cast<long long>(f.group_size), f.gemm_nap_s * 1e6,
                f.gemm_back_to_back_s * 1e6, f.gemm_worker_s * 1e6, f.gemm_during_comm_s * 1e6, f.compute_slowdown(),
                f.comm_alone_s * 1e6, f.comm_during_compute_s * 1e6, f.comm_slowdown());
  return buf;
}

} // namespace twinscale::backend
