#include "sim/collective_run.hpp"
#include "sim/error.hpp"

#include <set>
#include <stdexcept>
#include <string>

#include "sim/detail/collective_task.hpp"
#include "sim/detail/network_paths.hpp"

namespace twinscale::sim {

using schedules::OpKind;

std::vector<int64_t> collective_gpus(int64_t gpus, int64_t per_server, int64_t server_gpus) {
  if (per_server < 1 || per_server > server_gpus)
    throw SimError("gpus per server = " + std::to_string(per_server) + " (valid: 1.." + std::to_string(server_gpus) +
                   ", the cluster's GPUs per server)");
  if (gpus < 2 || gpus % per_server != 0)
    throw SimError("gpus = " + std::to_string(gpus) + " (valid: a multiple of " + std::to_string(per_server) +
                   " GPUs per server, at least 2)");
  std::vector<int64_t> out;
  for (int64_t i = 0; i < gpus; ++i) out.push_back((i / per_server) * server_gpus + i % per_server);
  return out;
}

CollectiveRunResult run_collective(const topology::Fabric& fabric, OpKind kind, const std::vector<int64_t>& gpus,
                                   double bytes, const SimOptions& options) {
  if (kind != OpKind::AllReduce && kind != OpKind::AllGather && kind != OpKind::ReduceScatter &&
      kind != OpKind::AllToAll && kind != OpKind::Broadcast)
    throw SimError("collective: " + std::string(schedules::to_string(kind)) +
                   " is not a collective (valid: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast)");
  const auto n = static_cast<int64_t>(gpus.size());
  if (n < 2) throw SimError("collective: " + std::to_string(n) + " GPUs (valid: at least 2)");
  if (!(bytes > 0)) throw SimError("collective: bytes = " + std::to_string(bytes) + " (valid: > 0)");
  std::set<int64_t> seen;
  for (int64_t g : gpus) {
    if (g < 0 || g >= fabric.gpus())
      throw SimError("collective: GPU " + std::to_string(g) + " outside the fabric's 0.." +
                     std::to_string(fabric.gpus() - 1));
    if (!seen.insert(g).second) throw SimError("collective: GPU " + std::to_string(g) + " given twice");
  }
  // A one-op schedule: n data-parallel ranks, each issuing the collective once.
  schedules::Schedule s;
  s.layout = {1, n, 1};
  s.job.name = "collective";
  s.job.parallel.tp = 1;
  s.job.parallel.dp = n;
  s.job.parallel.pp = 1;
  s.job.parallel.global_batch = n;
  s.job.model.seq_len = 1;
  schedules::Program program;
  schedules::Op op;
  op.kind = kind;
  op.group = schedules::GroupKind::Dp;
  op.bytes = bytes;
  op.stream = schedules::Stream::DpComm;
  program.ops.push_back(op);
  s.programs.push_back(std::move(program));
  s.program_of_rank.assign(static_cast<size_t>(n), 0);
  s.memory_by_stage.resize(1);
  const SimReport report = simulate(s, fabric, gpus, options);

  CollectiveRunResult r;
  r.bytes = bytes;
  r.time_s = report.iteration_time_s;
  r.flows = report.flows;
  if (r.time_s > 0) {
    r.algbw_bytes_per_s = bytes / r.time_s;
    r.busbw_bytes_per_s = r.algbw_bytes_per_s * nccl_bus_factor(kind, n);
  }
  // The plan the simulation used (same inputs, same tuner).
  const auto& spec = fabric.spec();
  SimOptions resolved = options;
  resolved.nccl = resolve_nccl(options.nccl, spec);
  detail::NetworkPaths paths(fabric, options.seed, options.ecmp,
                             options.nvlink_efficiency.value_or(spec.gpu.nvlink.efficiency),
                             options.network_efficiency.value_or(spec.server.nic.efficiency), options.nccl.pxn);
  detail::CollectiveTasks tasks(paths, resolved);
  const CollectivePlan plan = tasks.plan(kind, bytes, gpus);
  r.protocol = plan.protocol;
  r.algorithm = plan.algorithm;
  r.channels = plan.channels;
  r.servers = plan.servers;
  return r;
}

} // namespace twinscale::sim
