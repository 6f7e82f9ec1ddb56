// Jitter pauses of a fault plan (faults/fault_plan.hpp PlanEventKind::Jitter), drawn once
// when the executor is built: which compute ops of which ranks pause, and for how long.
#include <map>

#include "sim/detail/executor.hpp"

namespace twinscale::sim::detail {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

} // namespace

/// Jitter events (faults/fault_plan.hpp): for every executed rank on the event's GPU and
/// every iteration of its program, a pause with the event's probability on one of that
/// iteration's compute ops, drawn uniformly. The draws are a hash of (seed, GPU,
/// iteration) only: portable and the same whatever else the run holds.
void SimExecutor::plan_jitter() {
  if (options_.faults == nullptr) return;
  for (const auto& e : options_.faults->events) {
    if (e.kind != faults::PlanEventKind::Jitter) continue;
    for (size_t s = 0; s < slots_.size(); ++s) {
      if (slot_gpu_[s] != e.target_index) continue;
      std::map<int32_t, std::vector<uint32_t>> compute_ops; // iteration → its compute ops
      const auto& ops = slots_[s].program->ops;
      for (uint32_t i = 0; i < ops.size(); ++i) {
        const auto cls = slots_[s].hot[i].cls;
        if (cls == HotOp::Send || cls == HotOp::Recv || cls == HotOp::Collective) continue;
        compute_ops[ops[i].labels.iteration].push_back(i);
      }
      for (const auto& [iteration, list] : compute_ops) {
        const uint64_t h1 = splitmix64(
            e.seed ^ splitmix64(static_cast<uint64_t>(e.target_index) ^ splitmix64(static_cast<uint64_t>(iteration))));
        const double u = static_cast<double>(h1 >> 11) * 0x1.0p-53;
        if (u >= e.probability) continue;
        const uint32_t op = list[splitmix64(h1) % list.size()];
        jitter_s_[(static_cast<uint64_t>(s) << 32) | op] += e.delay_s;
      }
    }
  }
}

double SimExecutor::jitter_s(int32_t slot, uint32_t op) const {
  const auto it = jitter_s_.find((static_cast<uint64_t>(slot) << 32) | op);
  return it == jitter_s_.end() ? 0.0 : it->second;
}

} // namespace twinscale::sim::detail
