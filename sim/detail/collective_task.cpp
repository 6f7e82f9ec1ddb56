#include "sim/detail/collective_task.hpp"

#include <algorithm>

#include "schedules/error.hpp"
#include "sim/detail/degradation_windows.hpp"

namespace twinscale::sim::detail {

using schedules::OpKind;

double CollectiveTasks::simple_busbw(const CollectivePlan& plan, OpKind kind, double bytes,
                                     const std::vector<int64_t>& gpus) const {
  const double t =
      paths_.closed_form_s(plan, {gpus}, /*with_latency=*/false, /*reuse_routes=*/kind == OpKind::AllToAll);
  const double moved = bytes * nccl_bus_factor(kind, static_cast<int64_t>(gpus.size())) / plan.bw_fraction;
  return t > 0 ? moved / t : 0.0;
}

CollectivePlan CollectiveTasks::plan(OpKind kind, double bytes, const std::vector<int64_t>& gpus) const {
  const auto& fabric = paths_.fabric();
  GroupPlacement where;
  where.server.reserve(gpus.size());
  where.nic.reserve(gpus.size());
  for (int64_t g : gpus) {
    where.server.push_back(fabric.server_of_gpu(g));
    where.nic.push_back(fabric.nic_of_gpu(g));
  }
  CollectivePlan p = plan_collective(kind, where, bytes, options_.all_reduce_algorithm, options_.channels);
  if (p.phases.empty() || !options_.nccl.model_protocols) return p;
  const auto n = static_cast<int64_t>(gpus.size());
  int64_t bits = 0;
  static_assert(sizeof bits == sizeof bytes);
  __builtin_memcpy(&bits, &bytes, sizeof bits); // equal keys: the same bytes, bit for bit
  key_.assign({static_cast<int64_t>(kind) * 2 + (p.algorithm == CollectiveAlgorithm::Tree ? 1 : 0), bits});
  key_.insert(key_.end(), gpus.begin(), gpus.end());
  auto it = tuned_.find(key_);
  if (it == tuned_.end()) {
    const CollectiveShape shape = collective_shape(p, kind, n);
    const ProtocolCost cost = choose_protocol(options_.nccl, shape, bytes, simple_busbw(p, kind, bytes, gpus));
    it = tuned_.emplace(key_, std::make_pair(cost, protocol_latency_s(options_.nccl, shape, cost))).first;
  }
  apply_protocol(p, it->second.first, it->second.second);
  return p;
}

double CollectiveTasks::closed_form_s(OpKind kind, double bytes, const std::vector<std::vector<int64_t>>& gpu_groups,
                                      double start_s) const {
  TWINSCALE_ASSERT(!gpu_groups.empty(), "a collective needs a group");
  return closed_form_s(plan(kind, bytes, gpu_groups.front()), kind, gpu_groups, start_s);
}

double CollectiveTasks::closed_form_s(const CollectivePlan& p, OpKind kind,
                                      const std::vector<std::vector<int64_t>>& gpu_groups, double start_s) const {
  if (p.phases.empty()) return 0;
  if (const DegradationWindows* w = paths_.windows()) return w->closed_form_s(p, gpu_groups, start_s);
  return paths_.closed_form_s(p, gpu_groups, /*with_latency=*/true, /*reuse_routes=*/kind == OpKind::AllToAll);
}

CommTask CollectiveTasks::flow_task(OpKind kind, double bytes, const std::vector<std::vector<int64_t>>& groups,
                                    bool merged) const {
  TWINSCALE_ASSERT(!groups.empty(), "a collective needs a group");
  const CollectivePlan plan = this->plan(kind, bytes, groups.front());
  CommTask task;
  if (plan.phases.empty()) {
    task.closed_form_s = 0;
    return task;
  }
  const auto n = groups.front().size();
  for (const auto& phase : plan.phases) {
    task.phase_begin.push_back(static_cast<uint32_t>(task.flows.size()));
    const auto T = phase.transfers.size();
    const auto steps = static_cast<size_t>(phase.steps);
    // The transfer arriving at each member on each channel (explicit steps wait for it).
    std::map<std::pair<int32_t, uint32_t>, int32_t> into;
    for (size_t t = 0; t < T; ++t)
      into.emplace(std::make_pair(phase.transfers[t].dst, phase.transfers[t].channel), static_cast<int32_t>(t));
    for (const auto& gpus : groups) {
      TWINSCALE_ASSERT(gpus.size() == n, "image groups must have the group's size");
      const size_t group_base = task.flows.size();
      for (size_t t = 0; t < T; ++t) {
        const auto& tr = phase.transfers[t];
        const int64_t src = gpus[static_cast<size_t>(tr.src)];
        const int64_t dst = gpus[static_cast<size_t>(tr.dst)];
        const double lat = paths_.path_latency_s(src, dst, tr.channel);
        const double phase_lat = std::max(phase.nccl_latency_s, static_cast<double>(phase.latency_steps) * lat);
        if (merged) {
          task.flows.push_back({src, dst, tr.channel, static_cast<double>(phase.steps) * phase.bytes_per_step,
                                std::max(0.0, phase_lat - lat), -1});
          continue;
        }
        for (size_t k = 0; k < steps; ++k) {
          FlowSpec f{src, dst, tr.channel, phase.bytes_per_step, 0, -1};
          if (k == 0) {
            f.delay_s = std::max(0.0, phase_lat - static_cast<double>(phase.steps) * lat);
          } else if (auto in = into.find({tr.src, tr.channel}); in != into.end()) {
            f.after = static_cast<int32_t>(group_base + static_cast<size_t>(in->second) * steps + (k - 1));
          }
          task.flows.push_back(f);
        }
      }
    }
  }
  if (task.phase_begin.size() <= 1) task.phase_begin.clear();
  return task;
}

} // namespace twinscale::sim::detail
