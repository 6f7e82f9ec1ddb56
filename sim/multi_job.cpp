#include "sim/multi_job.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "sim/detail/executor.hpp"
#include "sim/detail/flow_plugin.hpp"
#include "sim/detail/forked_run.hpp"
#include "sim/detail/network_paths.hpp"
#include "sim/device_model.hpp"
#include "sim/error.hpp"
#include "sim/nccl_model.hpp"

namespace twinscale::sim {

namespace {

/// Routes the shared engine's completions back to the job that issued the work: slots
/// are numbered job after job, communication ids interleaved (id · jobs + job).
class JobMux final : public detail::CompletionListener {
public:
  /// Ids of the timers that start late jobs (job j: kStartTimer + j), above every id
  /// the jobs' own communications get (id · jobs + job).
  static constexpr uint32_t kStartTimer = 0xFFFF0000u;

  std::vector<detail::SimExecutor*> executors;
  std::vector<int32_t> slot_begin; // first slot of each job, plus the total

  void on_compute_done(int32_t slot, uint32_t op) override {
    const auto j =
        static_cast<size_t>(std::upper_bound(slot_begin.begin(), slot_begin.end(), slot) - slot_begin.begin() - 1);
    executors[j]->on_compute_done(slot - slot_begin[j], op);
  }
  void on_comm_done(uint32_t comm_id, bool failed, double stalled_s) override {
    const auto jobs = static_cast<uint32_t>(executors.size());
    if (comm_id >= kStartTimer) { // a job's start time (run_jobs)
      executors[comm_id - kStartTimer]->start();
      return;
    }
    executors[comm_id % jobs]->on_comm_done(comm_id / jobs, failed, stalled_s);
  }
  void on_job_fault(const std::string& why) override {
    for (auto* e : executors) e->on_job_fault(why);
  }
};

/// One job's view of the shared engine: its slots and ids mapped into the shared
/// numbering; the bytes its flows put on every network link direction are counted.
class JobView final : public detail::TimeEngine {
public:
  JobView(detail::TimeEngine& engine, const detail::NetworkPaths& paths, int32_t slot_begin, uint32_t job,
          uint32_t jobs)
      : engine_(engine), paths_(paths), slot_begin_(slot_begin), job_(job), jobs_(jobs),
        bytes_(2 * paths.fabric().links().size(), 0.0) {}

  double now() const override { return engine_.now(); }
  void start_compute(int32_t slot, uint32_t op, double seconds) override {
    engine_.start_compute(slot + slot_begin_, op, seconds);
  }
  void set_comm_ctas(int32_t slot, int32_t ctas) override { engine_.set_comm_ctas(slot + slot_begin_, ctas); }
  void start_comm(uint32_t comm_id, detail::CommTask task) override {
    const auto& links = paths_.fabric().links();
    for (const auto& f : task.flows) {
      paths_.route(f.src_gpu, f.dst_gpu, f.channel, hops_);
      for (const auto& h : hops_) {
        const auto kind = links[h.link].kind;
        if (kind == topology::LinkKind::NvLink || kind == topology::LinkKind::Pcie) continue;
        bytes_[2 * h.link + (h.up ? 0 : 1)] += f.bytes;
      }
    }
    engine_.start_comm(comm_id * jobs_ + job_, std::move(task));
  }
  void run(const std::function<void()>&) override {
    throw std::logic_error("JobView::run: the shared engine runs every job at once");
  }
  const std::vector<double>& bytes() const { return bytes_; }

private:
  detail::TimeEngine& engine_;
  const detail::NetworkPaths& paths_;
  int32_t slot_begin_;
  uint32_t job_, jobs_;
  std::vector<double> bytes_;
  std::vector<topology::Hop> hops_;
};

void check_jobs(const std::vector<JobOnFabric>& jobs, const topology::Fabric& fabric, const SimOptions& options) {
  if (jobs.empty()) throw SimError("simulate jobs: no job given");
  if (jobs.size() >= 0xFFFFu) throw SimError("simulate jobs: at most 65534 jobs");
  for (const auto& j : jobs)
    if (!(j.start_s >= 0) || !std::isfinite(j.start_s))
      throw SimError("simulate jobs: job '" + j.name + "' has start_s " + std::to_string(j.start_s) + ", needs ≥ 0");
  if (options.mode != SimMode::Flow) throw SimError("simulate jobs: several jobs on one fabric need the flow mode");
  if (options.faults != nullptr || options.record_trace)
    throw SimError("simulate jobs: fault plans and traces are for one job (twinscale simulate)");
  std::vector<int32_t> owner(static_cast<size_t>(fabric.gpus()), -1);
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (jobs[j].schedule == nullptr) throw SimError("simulate jobs: job '" + jobs[j].name + "' has no schedule");
    if (static_cast<int64_t>(jobs[j].gpu_of_rank.size()) != jobs[j].schedule->layout.world())
      throw SimError("simulate jobs: job '" + jobs[j].name + "' places " + std::to_string(jobs[j].gpu_of_rank.size()) +
                     " ranks, its schedule has " + std::to_string(jobs[j].schedule->layout.world()));
    try {
      check_ep_domains(*jobs[j].schedule, fabric, jobs[j].gpu_of_rank);
    } catch (const SimError& e) {
      throw SimError("simulate jobs: job '" + jobs[j].name + "': " + e.what());
    }
    for (int64_t g : jobs[j].gpu_of_rank) {
      if (g < 0 || g >= fabric.gpus())
        throw SimError("simulate jobs: job '" + jobs[j].name + "' uses GPU " + std::to_string(g) + " outside 0.." +
                       std::to_string(fabric.gpus() - 1));
      auto& o = owner[static_cast<size_t>(g)];
      if (o >= 0)
        throw SimError("simulate jobs: GPU " + fabric.gpu_name(g) + " is given to job '" +
                       jobs[static_cast<size_t>(o)].name + "' and to job '" + jobs[j].name + "'");
      o = static_cast<int32_t>(j);
    }
  }
}

MultiJobReport run_jobs(const std::vector<JobOnFabric>& jobs, const topology::Fabric& fabric,
                        const SimOptions& user_options) {
  const topology::ClusterSpec& spec = fabric.spec();
  const DeviceModelParams params = user_options.device.apply(DeviceModelParams::from_gpu(spec.gpu));
  SimOptions options = user_options;
  options.comm_rate_factors = comm_rate_factors(spec.gpu, user_options.device.nccl_compute_slowdown);
  options.nvlink_efficiency = user_options.nvlink_efficiency.value_or(spec.gpu.nvlink.efficiency);
  options.network_efficiency = user_options.network_efficiency.value_or(spec.server.nic.efficiency);
  options.nccl = resolve_nccl(user_options.nccl, spec);
  const detail::NetworkPaths paths(fabric, options.seed, options.ecmp, *options.nvlink_efficiency,
                                   *options.network_efficiency, options.nccl.pxn);
  std::vector<std::unique_ptr<DeviceModel>> devices;
  std::vector<std::unique_ptr<detail::SimExecutor>> executors;
  JobMux mux;
  std::vector<int64_t> slot_gpu;
  for (const auto& j : jobs) {
    devices.push_back(std::make_unique<DeviceModel>(spec.gpu, params, user_options.calibration));
    devices.back()->set_op_names(&j.schedule->names);
    executors.push_back(
        std::make_unique<detail::SimExecutor>(*j.schedule, j.gpu_of_rank, options, *devices.back(), paths));
    mux.executors.push_back(executors.back().get());
    mux.slot_begin.push_back(static_cast<int32_t>(slot_gpu.size()));
    const auto& g = executors.back()->gpu_of_slot();
    slot_gpu.insert(slot_gpu.end(), g.begin(), g.end());
  }
  mux.slot_begin.push_back(static_cast<int32_t>(slot_gpu.size()));
  const std::unique_ptr<detail::TimeEngine> flow = detail::make_flow_engine(mux, paths, slot_gpu, options);
  detail::TimeEngine& engine = *flow;
  std::vector<std::unique_ptr<JobView>> views;
  for (size_t j = 0; j < jobs.size(); ++j) {
    views.push_back(std::make_unique<JobView>(engine, paths, mux.slot_begin[j], static_cast<uint32_t>(j),
                                              static_cast<uint32_t>(jobs.size())));
    executors[j]->attach(views.back().get());
  }
  engine.run([&]() {
    for (size_t j = 0; j < jobs.size(); ++j) {
      if (jobs[j].start_s > 0) { // a timer on the engine starts it
        detail::CommTask timer;
        timer.closed_form_s = jobs[j].start_s;
        engine.start_comm(JobMux::kStartTimer + static_cast<uint32_t>(j), std::move(timer));
      } else {
        executors[j]->start();
      }
    }
  });
  MultiJobReport r;
  r.flows = engine.flows_started();
  for (size_t j = 0; j < jobs.size(); ++j) {
    detail::SimExecutor& ex = *executors[j];
    ex.check_finished();
    JobOutcome o;
    o.name = jobs[j].name;
    o.completed = !ex.job_failed();
    o.failure = ex.failure();
    o.makespan_s = (ex.job_failed() ? ex.failure_time_s() : ex.last_end_s()) - jobs[j].start_s;
    o.iteration_time_s =
        o.makespan_s / static_cast<double>(std::max<int64_t>(1, jobs[j].schedule->job.options.iterations));
    r.jobs.push_back(o);
  }
  const size_t directions = 2 * fabric.links().size();
  for (size_t d = 0; d < directions; ++d) {
    SharedLink s{static_cast<uint32_t>(d / 2), d % 2 == 0, {}};
    int users = 0;
    for (const auto& v : views) {
      s.bytes_by_job.push_back(v->bytes()[d]);
      users += v->bytes()[d] > 0;
    }
    if (users >= 2) r.shared_links.push_back(std::move(s));
  }
  auto contention = [](const SharedLink& s) {
    std::vector<double> b = s.bytes_by_job;
    std::sort(b.rbegin(), b.rend());
    return b[1]; // the second-largest user's bytes: what the largest must share with
  };
  std::stable_sort(r.shared_links.begin(), r.shared_links.end(),
                   [&](const SharedLink& a, const SharedLink& b) { return contention(a) > contention(b); });
  return r;
}

// Text codec for the report (doubles in hexfloat: exact).
std::string encode(const MultiJobReport& r) {
  std::ostringstream o;
  o << std::hexfloat << r.jobs.size() << ' ' << r.shared_links.size() << ' ' << r.flows << '\n';
  for (const auto& j : r.jobs)
    o << j.name.size() << ' ' << j.name << ' ' << j.failure.size() << ' ' << j.failure << ' ' << j.completed << ' '
      << j.iteration_time_s << ' ' << j.makespan_s << '\n';
  for (const auto& s : r.shared_links) {
    o << s.link << ' ' << s.up;
    for (double b : s.bytes_by_job) o << ' ' << b;
    o << '\n';
  }
  return o.str();
}

std::string read_text(std::istringstream& in) {
  size_t n = 0;
  in >> n;
  in.get(); // the separating space
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  return s;
}

double read_double(std::istringstream& in) {
  std::string t;
  in >> t;
  return std::strtod(t.c_str(), nullptr); // hexfloat: operator>> does not read it
}

MultiJobReport decode(const std::string& text) {
  std::istringstream in(text);
  MultiJobReport r;
  size_t jobs = 0, links = 0;
  in >> jobs >> links >> r.flows;
  for (size_t j = 0; j < jobs; ++j) {
    JobOutcome o;
    o.name = read_text(in);
    o.failure = read_text(in);
    in >> o.completed;
    o.iteration_time_s = read_double(in);
    o.makespan_s = read_double(in);
    r.jobs.push_back(o);
  }
  for (size_t l = 0; l < links; ++l) {
    SharedLink s;
    in >> s.link >> s.up;
    for (size_t j = 0; j < jobs; ++j) s.bytes_by_job.push_back(read_double(in));
    r.shared_links.push_back(std::move(s));
  }
  if (!in) throw SimError("simulate jobs: malformed report from the SimGrid process");
  return r;
}

} // namespace

MultiJobReport simulate_jobs(const std::vector<JobOnFabric>& jobs, const topology::Fabric& fabric,
                             const SimOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  check_jobs(jobs, fabric, options);
  MultiJobReport r =
      decode(detail::run_forked([&]() { return encode(run_jobs(jobs, fabric, options)); }, "simulate jobs"));
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

} // namespace twinscale::sim
