#include "sim/collective_algorithms.hpp"

#include <stdexcept>
#include <string>

#include "schedules/error.hpp"
#include "sim/error.hpp"

namespace twinscale::sim {

using schedules::OpKind;

std::string_view to_string(CollectiveAlgorithm a) {
  switch (a) {
  case CollectiveAlgorithm::Ring: return "ring";
  case CollectiveAlgorithm::Tree: return "tree";
  }
  TWINSCALE_ASSERT(false, "unknown CollectiveAlgorithm");
}

double CollectivePlan::bytes_sent_per_member(int64_t group_size) const {
  double total = 0;
  for (const auto& p : phases)
    total += static_cast<double>(p.transfers.size()) * static_cast<double>(p.steps) * p.bytes_per_step;
  return group_size > 0 ? total / static_cast<double>(group_size) : 0.0;
}

namespace {

CollectivePhase ring_phase(int64_t n, int64_t steps, double bytes_per_step) {
  CollectivePhase p;
  p.steps = steps;
  p.latency_steps = steps;
  p.bytes_per_step = bytes_per_step;
  for (int64_t i = 0; i < n; ++i)
    p.transfers.push_back({static_cast<int32_t>(i), static_cast<int32_t>((i + 1) % n)});
  return p;
}

int64_t tree_depth(int64_t n) {
  int64_t depth = 0;
  while ((int64_t{1} << (depth + 1)) <= n) ++depth; // floor(log2 n)
  return depth;
}

CollectivePhase double_binary_tree_phase(int64_t n, double bytes) {
  CollectivePhase p;
  p.steps = 1;
  p.bytes_per_step = bytes / 2.0; // each tree carries half
  p.latency_steps = 2 * tree_depth(n);
  for (int tree = 0; tree < 2; ++tree) {
    auto member = [&](int64_t pos) { return static_cast<int32_t>(tree == 0 ? pos : n - 1 - pos); };
    for (int64_t pos = 1; pos < n; ++pos) {
      const int32_t child = member(pos);
      const int32_t parent = member((pos - 1) / 2);
      p.transfers.push_back({child, parent}); // reduce, up
      p.transfers.push_back({parent, child}); // broadcast, down (pipelined with the reduce)
    }
  }
  return p;
}

} // namespace

CollectivePlan plan_collective(OpKind kind, int64_t n, double bytes, CollectiveAlgorithm algorithm) {
  CollectivePlan plan;
  plan.algorithm = CollectiveAlgorithm::Ring;
  if (n <= 1) return plan;
  const double nd = static_cast<double>(n);
  switch (kind) {
  case OpKind::AllReduce:
    if (algorithm == CollectiveAlgorithm::Tree && n > 2) {
      plan.algorithm = CollectiveAlgorithm::Tree;
      plan.phases.push_back(double_binary_tree_phase(n, bytes));
    } else {
      plan.phases.push_back(ring_phase(n, 2 * (n - 1), bytes / nd));
    }
    break;
  case OpKind::AllGather:
  case OpKind::ReduceScatter:
    plan.phases.push_back(ring_phase(n, n - 1, bytes / nd));
    break;
  case OpKind::Broadcast: {
    CollectivePhase p;
    p.steps = 1;
    p.bytes_per_step = bytes;
    p.latency_steps = n - 1;
    for (int64_t i = 0; i + 1 < n; ++i)
      p.transfers.push_back({static_cast<int32_t>(i), static_cast<int32_t>(i + 1)});
    plan.phases.push_back(std::move(p));
    break;
  }
  case OpKind::AllToAll: {
    CollectivePhase p;
    p.steps = 1;
    p.bytes_per_step = bytes / nd;
    p.latency_steps = 1;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        if (i != j) p.transfers.push_back({static_cast<int32_t>(i), static_cast<int32_t>(j)});
    plan.phases.push_back(std::move(p));
    break;
  }
  default:
    throw SimError("plan_collective: " + std::string(schedules::to_string(kind)) +
                                " is not a collective (valid: all_reduce, all_gather, "
                                "reduce_scatter, broadcast, all_to_all)");
  }
  return plan;
}

double ring_all_reduce_seconds(int64_t n, double bytes, double bw, double lat) {
  if (n <= 1) return 0;
  const double steps = 2.0 * static_cast<double>(n - 1);
  return steps * (lat + bytes / static_cast<double>(n) / bw);
}

double ring_all_gather_seconds(int64_t n, double bytes, double bw, double lat) {
  if (n <= 1) return 0;
  const double steps = static_cast<double>(n - 1);
  return steps * (lat + bytes / static_cast<double>(n) / bw);
}

} // namespace twinscale::sim
