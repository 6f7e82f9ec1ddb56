#include "sim/simulate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <system_error>

#include "schedules/error.hpp"
#include "sim/detail/analytic_engine.hpp"
#include "sim/detail/degradation_windows.hpp"
#include "sim/detail/executor.hpp"
#include "sim/detail/flow_plugin.hpp"
#include "sim/detail/forked_run.hpp"
#include "sim/detail/network_paths.hpp"
#include "sim/detail/report_codec.hpp"

namespace twinscale::sim {

std::string_view to_string(SimMode m) { return enum_name(kSimModeNames, m); }

std::shared_ptr<detail::RouteMemo> make_shared_routes() { return std::make_shared<detail::RouteMemo>(); }

bool per_op_forced() {
  static const bool forced = [] {
    const char* v = std::getenv("TWINSCALE_PER_OP");
    return v != nullptr && v[0] == '1';
  }();
  return forced;
}

namespace {

void check_options(const SimOptions& o) {
  if (o.channels < 1 || o.channels > 64)
    throw SimError("simulate: channels = " + std::to_string(o.channels) + " (valid: 1..64)");
  const auto bad_eff = [](const std::optional<double>& e) { return e && !(*e > 0 && *e <= 1); };
  if (bad_eff(o.nvlink_efficiency) || bad_eff(o.network_efficiency))
    throw SimError("simulate: link efficiencies must be in (0, 1]");
  const auto& n = o.nccl;
  const auto any = [](const std::array<bool, kNcclProtocols>& e) { return e[0] || e[1] || e[2]; };
  if ((n.enabled && !any(*n.enabled)) || (n.tuning && !any(n.tuning->enabled)))
    throw SimError("simulate: no NCCL protocol enabled (valid: any of LL, LL128, Simple)");
  if (n.tuning) {
    const auto& t = *n.tuning;
    for (double f : {t.ll_fraction_all_reduce_or_multi_server, t.ll_fraction_other, t.ll128_fraction,
                     t.ll128_fraction_one_gpu_per_server, t.tree_fraction, t.tree_ll_fraction, t.tree_ll128_fraction,
                     t.tree_ll128_fraction_one_server})
      if (!(f > 0 && f <= 1)) throw SimError("simulate: NCCL protocol bandwidth fractions must be in (0, 1]");
  }
  if (o.device.nccl_compute_slowdown && *o.device.nccl_compute_slowdown < 0)
    throw SimError("simulate: nccl_compute_slowdown must be ≥ 0");
}

/// The plan's link degradations: for the whole run (at_s = 0, no end) the link is
/// degraded in `paths`; in a time window it goes into paths' DegradationWindows.
void apply_link_degradations(const faults::FaultPlan& plan, const SimOptions& options, detail::NetworkPaths& paths) {
  std::vector<detail::DegradationWindow> windows;
  for (const auto& e : plan.events) {
    if (e.kind != faults::PlanEventKind::LinkDegraded) continue;
    if (e.target_index < 0 || e.target_index >= static_cast<int64_t>(paths.fabric().links().size()))
      throw SimError("fault plan: link-degraded event on '" + e.target + "' was not validated against the fabric");
    const auto link = static_cast<uint32_t>(e.target_index);
    if (e.at_s <= 0 && std::isinf(e.until_s)) {
      paths.degrade_link(link, e.bandwidth_factor);
      continue;
    }
    if (options.mode == SimMode::Flow && options.network.congestion_control != topology::CongestionControl::None)
      throw SimError("fault plan: link-degraded event on '" + e.target +
                     "' has a time window, which the flow mode does not combine with [network] "
                     "congestion_control (its pause model assumes fixed link capacities); use congestion_control = "
                     "\"none\" or a degradation for the whole run");
    windows.push_back({link, e.bandwidth_factor, e.at_s, e.until_s});
  }
  if (!windows.empty()) paths.set_windows(std::make_shared<detail::DegradationWindows>(paths, std::move(windows)));
}

void add(Breakdown& a, const Breakdown& b, double w) {
  a.compute_s += w * b.compute_s;
  a.exposed_tp_s += w * b.exposed_tp_s;
  a.exposed_ep_s += w * b.exposed_ep_s;
  a.exposed_pp_s += w * b.exposed_pp_s;
  a.exposed_dp_s += w * b.exposed_dp_s;
  a.bubble_s += w * b.bubble_s;
  a.idle_s += w * b.idle_s;
}

SimReport run_in_process(const schedules::Schedule& schedule, const topology::Fabric& fabric,
                         const std::vector<int64_t>& gpu_of_rank, const SimOptions& user_options) {
  const auto t0 = std::chrono::steady_clock::now();
  check_options(user_options);
  const topology::ClusterSpec& spec = fabric.spec();
  DeviceModelParams params = user_options.device.apply(DeviceModelParams::from_gpu(spec.gpu));
  if (user_options.speed_variation && (user_options.every_rank || !user_options.gpu_speed.empty()))
    throw SimError("simulate: speed_variation (--speed-variation) is the order-statistic shortcut of a symmetric "
                   "run; when every rank is executed give the per-GPU speeds themselves (--gpu-speed-dist "
                   "normal:SIGMA or --gpu-speed-file)");
  if (!user_options.speed_variation && (user_options.slow_hosts.fraction != 0 || user_options.slow_hosts.factor != 1))
    throw SimError("simulate: slow hosts (--slow-host-fraction, --slow-host-factor) apply to the order statistic "
                   "of --speed-variation; add --speed-variation");
  if (user_options.speed_variation) {
    SlowHosts slow = user_options.slow_hosts;
    slow.gpus_per_host = std::max<int64_t>(1, spec.server.gpus);
    params.compute_time_factor =
        slowest_gpu_factor(schedule.layout.world(), spec.gpu.kernels.speed_sigma, user_options.seed, slow);
  }
  DeviceModel device(spec.gpu, params, user_options.calibration);
  device.set_op_names(&schedule.names);
  // Servers with another GPU model ([[gpu_groups]]): one device model each, with the
  // same options applied to the group's catalogue figures.
  std::vector<std::unique_ptr<DeviceModel>> group_devices;
  std::vector<const DeviceModel*> models;
  const int64_t servers = fabric.gpus() / std::max<int64_t>(1, spec.server.gpus);
  for (size_t g = 0; g < spec.gpu_groups.size(); ++g) {
    const topology::GpuGroup& group = spec.gpu_groups[g];
    if (group.last_server >= servers)
      throw SimError("cluster '" + spec.name + "': gpu_groups[" + std::to_string(g) + "] servers " +
                     std::to_string(group.first_server) + "-" + std::to_string(group.last_server) +
                     ": the fabric has servers 0-" + std::to_string(servers - 1));
    if (models.empty()) models.push_back(&device);
    DeviceModelParams p = user_options.device.apply(DeviceModelParams::from_gpu(group.gpu));
    p.compute_time_factor = params.compute_time_factor;
    group_devices.push_back(std::make_unique<DeviceModel>(group.gpu, p, user_options.calibration));
    group_devices.back()->set_op_names(&schedule.names);
    models.push_back(group_devices.back().get());
  }
  // The options with every catalogue figure resolved (what the backends read).
  SimOptions options = user_options;
  options.comm_rate_factors = comm_rate_factors(spec.gpu, user_options.device.nccl_compute_slowdown);
  options.nvlink_efficiency = user_options.nvlink_efficiency.value_or(spec.gpu.nvlink.efficiency);
  options.network_efficiency = user_options.network_efficiency.value_or(spec.server.nic.efficiency);
  options.nccl = resolve_nccl(user_options.nccl, spec);
  detail::NetworkPaths paths(fabric, options.seed, options.ecmp, *options.nvlink_efficiency,
                             *options.network_efficiency, options.nccl.pxn);
  if (!user_options.nvlink_efficiency && !spec.gpu_groups.empty()) // each group its NVLink generation's
    for (size_t l = 0; l < fabric.links().size(); ++l) {
      const topology::Link& link = fabric.links()[l];
      if (link.kind != topology::LinkKind::NvLink) continue;
      const int64_t server = fabric.server_of_gpu(fabric.vertices()[link.a].index);
      paths.set_nvlink_efficiency(static_cast<uint32_t>(l), topology::gpu_of_server(spec, server).nvlink.efficiency);
    }
  if (options.faults != nullptr) apply_link_degradations(*options.faults, options, paths);
  if (options.shared_routes && options.faults == nullptr && !per_op_forced())
    paths.share_routes(*options.shared_routes);
  // The executed pipeline (symmetric runs): the one holding the most slowed GPU of a
  // fault plan, since every DP/TP collective makes its whole stage wait for it. Runs
  // that execute every rank apply each slowdown to its own GPU instead.
  schedules::RankCoord representative{};
  if (options.faults != nullptr) {
    if (options.mode == SimMode::Analytic && !faults::only_rank_specific_events(*options.faults))
      throw SimError("simulate: fault plans with link outages, GPU slowdowns or server crashes need the flow mode "
                     "(--mode flow); the analytic mode runs link-degraded and jitter events only");
    double worst = 0;
    for (const auto& e : options.faults->events) {
      if (e.kind != faults::PlanEventKind::GpuSlowdown || e.slowdown <= worst) continue;
      for (size_t r = 0; r < gpu_of_rank.size(); ++r)
        if (gpu_of_rank[r] == e.target_index) {
          representative = schedule.layout.coord(static_cast<int64_t>(r));
          worst = e.slowdown;
        }
    }
  }
  for (int64_t rank : options.trace_ranks)
    if (rank < 0 || rank >= schedule.layout.world())
      throw SimError("trace ranks: rank " + std::to_string(rank) + " outside 0.." +
                     std::to_string(schedule.layout.world() - 1));
  // The closed forms of the pipeline a symmetric run executes, computed on the other
  // core while the executor is set up and runs (closed_form_prefetch.hpp: the same doubles).
  std::optional<detail::ClosedFormPrefetch> prefetch;
  if (models.empty() && detail::ClosedFormPrefetch::worth_it(options, paths)) { // one GPU model: symmetric
    try {
      prefetch.emplace(schedule, gpu_of_rank, paths, options,
                       detail::SimExecutor::symmetric_ranks(schedule.layout, representative), options.aggregate);
    } catch (const std::system_error&) { // no thread to be had: each is computed when first asked for
    }
  }
  detail::SimExecutor ex(schedule, gpu_of_rank, options, device, paths, representative, models);
  if (prefetch) ex.use_prefetch(&*prefetch);
  std::unique_ptr<detail::TimeEngine> backend;
  if (options.mode == SimMode::Analytic)
    backend = std::make_unique<detail::AnalyticEngine>(ex, ex.slot_ranks().size(), options.comm_rate_factors);
  else
    backend = detail::make_flow_engine(ex, paths, ex.gpu_of_slot(), options);
  std::optional<schedules::BinaryTraceWriter> trace_out;
  if (!options.binary_trace.empty()) {
    trace_out.emplace(options.binary_trace, schedule, "sim");
    trace_out->set_hosts(host_names(fabric, gpu_of_rank));
    ex.set_trace_sink(&*trace_out);
  }
  ex.attach(backend.get());
  backend->run([&ex]() { ex.start(); });
  ex.check_finished();

  SimReport r;
  r.mode = options.mode;
  r.aggregated = ex.aggregated();
  r.executed_ranks = static_cast<int64_t>(ex.slot_ranks().size());
  r.replica_classes = ex.replica_classes();
  r.ops_executed = ex.ops_executed();
  r.flows = backend->flows_started();
  r.completed = !ex.job_failed();
  r.failure = ex.failure();
  r.incidents = ex.incidents();
  r.link_loads = backend->link_loads();
  if (options.hang_rank >= 0) {
    r.hang_states = ex.hang_states(ex.last_end_s());
    int64_t waiting = 0;
    for (const records::RankState& h : r.hang_states) waiting += h.waiting.empty() ? 0 : 1;
    if (!ex.all_ops_done()) {
      r.completed = false;
      r.failure = "rank " + std::to_string(options.hang_rank) + " hung at " + std::to_string(options.hang_at_s) +
                  " s: the iteration did not complete; " + std::to_string(waiting) + " rank(s) wait in an op";
    }
  }

  const auto& slots = ex.slot_ranks();
  double makespan = ex.last_end_s();
  if (ex.job_failed()) makespan = ex.failure_time_s();
  ex.finish(makespan);
  if (trace_out) {
    if (!ex.all_ops_done()) ex.record_running_ops(*trace_out, makespan);
    trace_out->finish();
  }
  r.makespan_s = makespan;
  const auto iterations = std::max<int64_t>(1, schedule.job.options.iterations);
  r.iteration_time_s = makespan / static_cast<double>(iterations);
  const auto& L = schedule.layout;
  const double world = static_cast<double>(L.world());
  if (r.iteration_time_s > 0) {
    r.tokens_per_s = static_cast<double>(schedule.job.parallel.global_batch) *
                     static_cast<double>(schedule.job.model.seq_len) / r.iteration_time_s;
    const double flops_per_s = schedule.model_flops_per_iteration / r.iteration_time_s;
    r.tflops_per_gpu = flops_per_s / world / 1e12;
    double peak = world * spec.gpu.peak_flops; // Σ over ranks of their GPU's peak
    if (!spec.gpu_groups.empty()) {
      peak = 0;
      for (int64_t g : gpu_of_rank) {
        const size_t m = topology::gpu_model_of_server(spec, fabric.server_of_gpu(g));
        peak += m == 0 ? spec.gpu.peak_flops : spec.gpu_groups[m - 1].gpu.peak_flops;
      }
    }
    r.mfu = flops_per_s / peak;
  }

  // Breakdowns: every executed rank stands for the same number of ranks, except in an
  // every-rank run executed by classes of identical replicas, where every rank is added
  // in rank order with its counterpart's account: the same sums as executing them all.
  std::vector<RankTimes> times(slots.size());
  for (size_t s = 0; s < slots.size(); ++s) {
    const auto& acc = ex.account(static_cast<int32_t>(s));
    const Breakdown& b = acc.breakdown();
    times[s].forward_s = acc.forward_s();
    times[s].backward_s = acc.backward_s();
    times[s].comm_wait_s = b.exposed_tp_s + b.exposed_ep_s + b.exposed_pp_s + b.exposed_dp_s + b.bubble_s;
  }
  std::vector<std::pair<int64_t, int32_t>> counted; // (rank, slot) in the order the sums take them
  if (ex.replica_classes() > 0)
    for (int64_t rank = 0; rank < L.world(); ++rank) counted.emplace_back(rank, ex.representative_slot(rank));
  else
    for (size_t s = 0; s < slots.size(); ++s) counted.emplace_back(slots[s], static_cast<int32_t>(s));
  r.per_stage.assign(static_cast<size_t>(L.pp), Breakdown{});
  std::vector<int64_t> per_stage_count(static_cast<size_t>(L.pp), 0);
  for (const auto& [rank, slot] : counted) {
    add(r.breakdown, ex.account(slot).breakdown(), 1.0 / static_cast<double>(counted.size()));
    ++per_stage_count[static_cast<size_t>(L.coord(rank).pp)];
  }
  for (const auto& [rank, slot] : counted) {
    const auto pp = static_cast<size_t>(L.coord(rank).pp);
    add(r.per_stage[pp], ex.account(slot).breakdown(), 1.0 / static_cast<double>(per_stage_count[pp]));
  }
  const int64_t listed = options.per_rank ? L.world() : 0; // SimOptions::per_rank
  r.per_rank.resize(static_cast<size_t>(listed));
  r.per_rank_breakdown.resize(static_cast<size_t>(listed));
  for (int64_t rank = 0; rank < listed; ++rank) {
    const int32_t slot = ex.representative_slot(rank);
    RankTimes t = times[static_cast<size_t>(slot)];
    const auto c = L.coord(rank);
    t.rank = rank;
    t.tp = c.tp;
    t.pp = c.pp;
    t.dp = c.dp;
    r.per_rank[static_cast<size_t>(rank)] = t;
    r.per_rank_breakdown[static_cast<size_t>(rank)] = ex.account(slot).breakdown();
  }

  if (options.record_trace) {
    r.trace.source = "sim";
    std::set<int64_t> ranks(options.trace_ranks.begin(), options.trace_ranks.end());
    if (ranks.empty() && ex.replica_classes() > 0) // every rank, each from its counterpart's timings
      for (int64_t rank = 0; rank < L.world(); ++rank) ranks.insert(rank);
    if (ranks.empty()) ranks.insert(slots.begin(), slots.end());
    for (int64_t rank : ranks) {
      if (rank < 0 || rank >= L.world())
        throw SimError("trace ranks: rank " + std::to_string(rank) + " outside 0.." + std::to_string(L.world() - 1));
      const auto& timing = ex.timings(ex.representative_slot(rank));
      for (uint32_t i = 0; i < timing.size(); ++i) {
        const auto& t = timing[i];
        if (t.start_s < 0) continue;
        r.trace.events.push_back({rank, i, t.start_s, t.end_s >= 0 ? t.end_s : makespan, t.failed || t.end_s < 0});
      }
    }
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

} // namespace

void check_ep_domains(const schedules::Schedule& schedule, const topology::Fabric& fabric,
                      const std::vector<int64_t>& gpu_of_rank) {
  const schedules::Layout& L = schedule.layout;
  const schedules::ParallelSpec& par = schedule.job.parallel;
  if (par.ep_a2a != schedules::EpAllToAll::Hierarchical || L.ep_node <= 1) return;
  if (static_cast<int64_t>(gpu_of_rank.size()) != L.world()) return; // the executor names that error
  for (int64_t r = 0; r < L.world(); ++r) {
    if (L.group_rank(schedules::GroupKind::EpNode, r) != 0) continue; // one check per group, from its first rank
    const int64_t server = fabric.server_of_gpu(gpu_of_rank[static_cast<size_t>(r)]);
    for (int64_t m : L.group_members(schedules::GroupKind::EpNode, r)) {
      const int64_t other = fabric.server_of_gpu(gpu_of_rank[static_cast<size_t>(m)]);
      if (other == server) continue;
      const int64_t per_server = fabric.spec().server.gpus;
      throw SimError("simulate: parallel.ep_node = " + std::to_string(L.ep_node) + " (tp " + std::to_string(L.tp) +
                     "): the NVLink phase of the hierarchical all-to-all puts rank " + std::to_string(r) + " (server " +
                     std::to_string(server) + ") and rank " + std::to_string(m) + " (server " + std::to_string(other) +
                     ") in one domain, but cluster '" + fabric.spec().name + "' has " + std::to_string(per_server) +
                     " GPUs per server (NVLink domain); valid: ep_node · tp ≤ " + std::to_string(per_server) +
                     " with a placement that keeps the group in one server");
    }
  }
}

std::vector<std::string> host_names(const topology::Fabric& fabric, const std::vector<int64_t>& gpu_of_rank) {
  std::vector<std::string> out;
  out.reserve(gpu_of_rank.size());
  for (int64_t gpu : gpu_of_rank) out.push_back(fabric.server_name(fabric.server_of_gpu(gpu)));
  return out;
}

SimReport simulate(const schedules::Schedule& schedule, const topology::Fabric& fabric,
                   const std::vector<int64_t>& gpu_of_rank, const SimOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  if (options.hang_rank >= 0) {
    if (options.mode != SimMode::Analytic || !options.every_rank)
      throw SimError("simulate: a hung rank (--hang-rank) needs the analytic mode with every rank executed "
                     "(--mode analytic --every-rank)");
    if (options.hang_rank >= schedule.layout.world())
      throw SimError("simulate: --hang-rank " + std::to_string(options.hang_rank) + " outside the world 0.." +
                     std::to_string(schedule.layout.world() - 1));
    if (!(options.hang_at_s >= 0) || !(options.hang_at_s < 1e12))
      throw SimError("simulate: --hang-at-s " + std::to_string(options.hang_at_s) +
                     " (valid: a finite number of seconds >= 0)");
  }
  check_ep_domains(schedule, fabric, gpu_of_rank);
  // TWINSCALE_SIM_NO_FORK=1 runs the flow mode in this process (debuggers, profilers):
  // then only one flow-mode simulation may run per process.
  const char* no_fork = std::getenv("TWINSCALE_SIM_NO_FORK");
  const bool in_process = options.mode == SimMode::Analytic || (no_fork != nullptr && no_fork[0] == '1');
  // Flow mode: SimGrid's engine is a process-wide singleton that 3.32 cannot re-create,
  // so each run happens in a forked child that sends its report back through a pipe.
  SimReport r = in_process
                    ? run_in_process(schedule, fabric, gpu_of_rank, options)
                    : detail::decode_report(detail::run_forked(
                          [&] { return detail::encode_report(run_in_process(schedule, fabric, gpu_of_rank, options)); },
                          "simulate"));
  if (options.record_trace) r.trace.hosts = host_names(fabric, gpu_of_rank);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

} // namespace twinscale::sim
