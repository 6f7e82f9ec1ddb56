#include "sim/collective_algorithms.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "schedules/error.hpp"
#include "sim/error.hpp"

namespace twinscale::sim {

using schedules::OpKind;

std::string_view to_string(CollectiveAlgorithm a) { return enum_name(kCollectiveAlgorithmNames, a); }

double CollectivePlan::bytes_sent_per_member(int64_t group_size) const {
  double total = 0;
  for (const auto& p : phases)
    total += static_cast<double>(p.transfers.size()) * static_cast<double>(p.steps) * p.bytes_per_step;
  return group_size > 0 ? total / static_cast<double>(group_size) : 0.0;
}

namespace {

using Ring = std::vector<int32_t>; // members in ring order

/// Members grouped by server, servers in order of first appearance, members of a
/// server in group order. (Sorted pairs, not a map: a closed form plans its group at every
/// sweep point, and a node per member was most of that.)
std::vector<std::vector<int32_t>> members_by_server(const GroupPlacement& where) {
  const size_t n = where.server.size();
  std::vector<std::pair<int64_t, int32_t>> by_server(n); // (server, member): each server's run in group order
  for (size_t i = 0; i < n; ++i) by_server[i] = {where.server[i], static_cast<int32_t>(i)};
  std::sort(by_server.begin(), by_server.end());
  std::vector<std::pair<int32_t, size_t>> runs; // (first member, start of its run)
  for (size_t i = 0; i < n; ++i)
    if (i == 0 || by_server[i].first != by_server[i - 1].first) runs.emplace_back(by_server[i].second, i);
  std::sort(runs.begin(), runs.end()); // servers in order of their first member
  std::vector<std::vector<int32_t>> blocks(runs.size());
  for (size_t b = 0; b < runs.size(); ++b) {
    const int64_t server = by_server[runs[b].second].first;
    for (size_t i = runs[b].second; i < n && by_server[i].first == server; ++i)
      blocks[b].push_back(by_server[i].second);
  }
  return blocks;
}

/// Distinct NICs the members use inside one server (the largest over servers).
int64_t nics_per_server(const GroupPlacement& where, const std::vector<std::vector<int32_t>>& blocks) {
  int64_t k = 1;
  std::vector<int64_t> nics;
  for (const auto& b : blocks) {
    nics.clear();
    for (int32_t m : b) nics.push_back(where.nic[static_cast<size_t>(m)]);
    std::sort(nics.begin(), nics.end());
    k = std::max<int64_t>(k, std::unique(nics.begin(), nics.end()) - nics.begin());
  }
  return k;
}

/// Channel c's ring: servers in order, each server's members rotated to start at
/// member c mod (its members).
Ring channel_ring(const std::vector<std::vector<int32_t>>& blocks, int64_t c) {
  Ring ring;
  for (const auto& b : blocks) {
    const auto g = static_cast<int64_t>(b.size());
    for (int64_t i = 0; i < g; ++i) ring.push_back(b[static_cast<size_t>((c + i) % g)]);
  }
  return ring;
}

CollectivePhase ring_phase(const std::vector<Ring>& rings, int64_t steps, double bytes_per_step) {
  CollectivePhase p;
  p.steps = steps;
  p.latency_steps = steps;
  p.bytes_per_step = bytes_per_step;
  for (size_t c = 0; c < rings.size(); ++c) {
    const auto& r = rings[c];
    for (size_t i = 0; i < r.size(); ++i)
      p.transfers.push_back({r[i], r[(i + 1) % r.size()], static_cast<uint32_t>(c)});
  }
  return p;
}

int64_t tree_depth(int64_t n) {
  int64_t depth = 0;
  while ((int64_t{1} << (depth + 1)) <= n) ++depth; // floor(log2 n)
  return depth;
}

/// NCCL's tree: inside each server a chain through its members (starting at member
/// c mod (members) on channel c, so channels use different NICs); the chain heads form a
/// double binary tree over the servers (heap order on servers, and on servers reversed).
/// Each channel runs both trees with S/(2C) each; reduction up and broadcast down are
/// pipelined, so every edge carries its bytes in both directions at once.
CollectivePhase tree_phase(const std::vector<std::vector<int32_t>>& blocks, double bytes, int64_t channels) {
  CollectivePhase p;
  p.steps = 1;
  p.bytes_per_step = bytes / 2.0 / static_cast<double>(channels);
  const auto m = static_cast<int64_t>(blocks.size());
  int64_t longest_chain = 1;
  for (const auto& b : blocks) longest_chain = std::max<int64_t>(longest_chain, static_cast<int64_t>(b.size()));
  p.latency_steps = 2 * (tree_depth(m) + longest_chain - 1);
  auto both_ways = [&](int32_t a, int32_t b, int64_t c) {
    p.transfers.push_back({a, b, static_cast<uint32_t>(c)});
    p.transfers.push_back({b, a, static_cast<uint32_t>(c)});
  };
  for (int64_t c = 0; c < channels; ++c) {
    std::vector<int32_t> head(static_cast<size_t>(m));
    for (int64_t s = 0; s < m; ++s) {
      const auto& b = blocks[static_cast<size_t>(s)];
      const auto g = static_cast<int64_t>(b.size());
      head[static_cast<size_t>(s)] = b[static_cast<size_t>(c % g)];
      for (int64_t i = 0; i + 1 < g; ++i)
        for (int tree = 0; tree < 2; ++tree) // the chain carries both trees' halves
          both_ways(b[static_cast<size_t>((c + i) % g)], b[static_cast<size_t>((c + i + 1) % g)], c);
    }
    for (int tree = 0; tree < 2; ++tree) {
      auto server = [&](int64_t pos) { return static_cast<size_t>(tree == 0 ? pos : m - 1 - pos); };
      for (int64_t pos = 1; pos < m; ++pos) both_ways(head[server((pos - 1) / 2)], head[server(pos)], c);
    }
  }
  return p;
}

} // namespace

CollectivePlan plan_collective(OpKind kind, const GroupPlacement& where, double bytes, CollectiveAlgorithm algorithm,
                               int min_channels) {
  if (kind != OpKind::AllReduce && kind != OpKind::AllGather && kind != OpKind::ReduceScatter &&
      kind != OpKind::Broadcast && kind != OpKind::AllToAll)
    throw SimError("plan_collective: " + std::string(schedules::to_string(kind)) +
                   " is not a collective (valid: all_reduce, all_gather, "
                   "reduce_scatter, broadcast, all_to_all)");
  if (where.server.size() != where.nic.size())
    throw SimError("plan_collective: " + std::to_string(where.server.size()) + " servers for " +
                   std::to_string(where.nic.size()) + " NICs (one of each per member)");
  if (min_channels < 1) throw SimError("plan_collective: channels = " + std::to_string(min_channels) + " (valid: ≥ 1)");
  CollectivePlan plan;
  const auto n = static_cast<int64_t>(where.server.size());
  const auto blocks = members_by_server(where);
  plan.servers = static_cast<int64_t>(blocks.size());
  if (n <= 1) return plan;
  const double nd = static_cast<double>(n);
  if (kind == OpKind::AllToAll) {
    plan.channels = min_channels;
    CollectivePhase p;
    p.bytes_per_step = bytes / nd / static_cast<double>(plan.channels);
    for (int64_t c = 0; c < plan.channels; ++c)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          if (i != j)
            p.transfers.push_back({static_cast<int32_t>(i), static_cast<int32_t>(j), static_cast<uint32_t>(c)});
    plan.phases.push_back(std::move(p));
    return plan;
  }
  const int64_t k = nics_per_server(where, blocks);
  plan.channels = k * ((min_channels + k - 1) / k);
  const double C = static_cast<double>(plan.channels);
  if (kind == OpKind::AllReduce && algorithm == CollectiveAlgorithm::Tree && n > 2) {
    plan.algorithm = CollectiveAlgorithm::Tree;
    plan.phases.push_back(tree_phase(blocks, bytes, plan.channels));
    return plan;
  }
  std::vector<Ring> rings;
  for (int64_t c = 0; c < plan.channels; ++c) rings.push_back(channel_ring(blocks, c));
  switch (kind) {
  case OpKind::AllReduce: plan.phases.push_back(ring_phase(rings, 2 * (n - 1), bytes / nd / C)); break;
  case OpKind::AllGather:
  case OpKind::ReduceScatter: plan.phases.push_back(ring_phase(rings, n - 1, bytes / nd / C)); break;
  default: { // broadcast: each channel's ring, opened at the root (member 0)
    CollectivePhase p;
    p.steps = 1;
    p.bytes_per_step = bytes / C;
    p.latency_steps = n - 1;
    for (size_t c = 0; c < rings.size(); ++c) {
      Ring r = rings[c];
      std::rotate(r.begin(), std::find(r.begin(), r.end(), 0), r.end());
      for (size_t i = 0; i + 1 < r.size(); ++i) p.transfers.push_back({r[i], r[i + 1], static_cast<uint32_t>(c)});
    }
    plan.phases.push_back(std::move(p));
  }
  }
  return plan;
}

int64_t nccl_collective_ctas(const GroupPlacement& where) {
  if (where.server.size() <= 1) return 0;
  constexpr int64_t kMaxChannels = 32;  // NCCL's MAXCHANNELS (src/include/device.h)
  constexpr int64_t kNvswitchCtas = 24; // 6 rings, duplicated, doubled (see the header)
  const auto blocks = members_by_server(where);
  if (blocks.size() == 1) return kNvswitchCtas;
  return std::min(kMaxChannels, 2 * nics_per_server(where, blocks));
}

int64_t max_plan_channels(int min_channels, int64_t nics_per_server) {
  int64_t most = std::max(1, min_channels);
  for (int64_t k = 1; k <= nics_per_server; ++k) most = std::max(most, k * ((min_channels + k - 1) / k));
  return most;
}

CollectivePlan plan_collective(OpKind kind, int64_t n, double bytes, CollectiveAlgorithm algorithm) {
  GroupPlacement where;
  for (int64_t i = 0; i < n; ++i) {
    where.server.push_back(i);
    where.nic.push_back(0);
  }
  return plan_collective(kind, where, bytes, algorithm, 1);
}

void apply_protocol(CollectivePlan& plan, const ProtocolCost& cost, double latency_s) {
  TWINSCALE_ASSERT(cost.bw_fraction > 0, "protocol bandwidth fraction must be > 0");
  plan.protocol = cost.protocol;
  plan.bw_fraction = cost.bw_fraction;
  int64_t total_steps = 0;
  for (const auto& p : plan.phases) total_steps += p.latency_steps;
  for (auto& p : plan.phases) {
    p.bytes_per_step /= cost.bw_fraction;
    p.nccl_latency_s =
        total_steps > 0 ? latency_s * static_cast<double>(p.latency_steps) / static_cast<double>(total_steps) : 0.0;
  }
}

CollectiveShape collective_shape(const CollectivePlan& plan, OpKind kind, int64_t group_size) {
  CollectiveShape s;
  s.kind = kind;
  s.tree = plan.algorithm == CollectiveAlgorithm::Tree;
  s.ranks = group_size;
  s.servers = plan.servers;
  s.channels = plan.channels;
  return s;
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

CollectivePlan p2p_plan(double bytes, int channels) {
  CollectivePlan plan;
  CollectivePhase p;
  for (int c = 0; c < channels; ++c) p.transfers.push_back({0, 1, static_cast<uint32_t>(c)});
  p.bytes_per_step = bytes / channels;
  plan.phases.push_back(p);
  return plan;
}

} // namespace twinscale::sim
