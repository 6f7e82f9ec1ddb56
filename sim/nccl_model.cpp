#include "sim/nccl_model.hpp"

#include <algorithm>
#include <limits>

#include "schedules/error.hpp"
#include "sim/error.hpp"

namespace twinscale::sim {

using schedules::OpKind;

std::string_view to_string(NcclProtocol p) {
  switch (p) {
  case NcclProtocol::LL: return "LL";
  case NcclProtocol::LL128: return "LL128";
  case NcclProtocol::Simple: return "Simple";
  }
  TWINSCALE_ASSERT(false, "unknown NcclProtocol");
}

double nccl_bus_factor(OpKind kind, int64_t n) {
  if (n <= 1) return 0;
  const double nd = static_cast<double>(n);
  switch (kind) {
  case OpKind::AllReduce: return 2.0 * (nd - 1) / nd;
  case OpKind::AllGather:
  case OpKind::ReduceScatter:
  case OpKind::AllToAll: return (nd - 1) / nd;
  default: return 1.0;
  }
}

std::array<int64_t, 2> nccl_ring_steps(OpKind kind, int64_t n, int64_t servers) {
  switch (kind) {
  case OpKind::AllReduce: return {2 * (n - 1), 2 * (servers - 1)};
  case OpKind::AllGather:
  case OpKind::ReduceScatter: return {n - 1, servers - 1};
  case OpKind::Broadcast: return {n, servers};
  default: return {1, servers > 1 ? 1 : 0}; // all-to-all: every pair at once
  }
}

NcclParams resolve_nccl(const NcclParams& params, const topology::ClusterSpec& cluster) {
  NcclParams p = params;
  if (!p.tuning) {
    const topology::GpuSpec* lowest = &cluster.gpu;
    bool mixed = false;
    for (const auto& g : cluster.gpu_groups) {
      mixed = mixed || g.gpu.compute_capability != cluster.gpu.compute_capability;
      if (g.gpu.compute_capability < lowest->compute_capability) lowest = &g.gpu;
    }
    if (lowest->nccl.min_compute_capability <= 0)
      throw SimError("NCCL model: GPU '" + lowest->model +
                     "' has no NCCL tuner set (give it a compute_capability of the catalogue)");
    p.tuning = lowest->nccl;
    if (mixed) p.tuning->enabled[static_cast<size_t>(NcclProtocol::LL128)] = false;
  }
  topology::NcclTuningSpec& t = *p.tuning;
  if (p.ring_nvlink_step_s) t.nvlink_ring_step_s = *p.ring_nvlink_step_s;
  if (p.tree_nvlink_step_s) t.nvlink_tree_step_s = *p.tree_nvlink_step_s;
  if (p.ring_net_step_s) t.net_ring_step_s = *p.ring_net_step_s;
  if (p.tree_net_step_s) t.net_tree_step_s = *p.tree_net_step_s;
  if (p.enabled) t.enabled = *p.enabled;
  return p;
}

const topology::NcclTuningSpec& nccl_tuning(const NcclParams& params) {
  TWINSCALE_ASSERT(params.tuning.has_value(), "NCCL model: resolve_nccl has not run");
  return *params.tuning;
}

namespace {

double ll128_ceiling_per_channel(const topology::NcclTuningSpec& t, OpKind kind) {
  switch (kind) {
  case OpKind::AllReduce: return t.ll128_max_bw_per_channel_all_reduce;
  case OpKind::ReduceScatter: return t.ll128_max_bw_per_channel_reduce_scatter;
  case OpKind::Broadcast: return t.ll128_max_bw_per_channel_broadcast;
  default: return t.ll128_max_bw_per_channel_all_gather;
  }
}

/// `fraction` lowered to `ceiling` (bytes/s) over `simple_busbw` where that binds; a
/// ceiling of 0 is none.
double capped(double fraction, double ceiling, double simple_busbw) {
  if (ceiling > 0 && simple_busbw > 0) return std::min(fraction, ceiling / simple_busbw);
  return fraction;
}

/// The bandwidth fraction of protocol `p` (NCCL's "various model refinements").
double bw_fraction(const topology::NcclTuningSpec& t, const CollectiveShape& s, NcclProtocol p, double simple_busbw) {
  const bool multi = s.servers > 1;
  const double per_server = s.servers > 0 ? static_cast<double>(s.ranks) / static_cast<double>(s.servers) : 1.0;
  const size_t by_servers = s.servers <= 1 ? 0 : s.servers == 2 ? 1 : 2; // NCCL's N1/N2/N4 columns
  const double channels = static_cast<double>(std::max<int64_t>(1, s.channels));
  if (s.tree) {
    double f = capped(t.tree_fraction, t.tree_max_bw_per_channel[by_servers] * channels, simple_busbw);
    if (p == NcclProtocol::LL) f = capped(f * t.tree_ll_fraction, t.ll_max_busbw_bytes_per_s[by_servers], simple_busbw);
    if (p == NcclProtocol::LL128)
      f = capped(f * (multi ? t.tree_ll128_fraction : t.tree_ll128_fraction_one_server),
                 t.tree_ll128_max_bw_per_channel[by_servers] * channels, simple_busbw);
    return f;
  }
  if (p == NcclProtocol::LL)
    return capped((multi || s.kind == OpKind::AllReduce) ? t.ll_fraction_all_reduce_or_multi_server
                                                         : t.ll_fraction_other,
                  t.ll_max_busbw_bytes_per_s[by_servers], simple_busbw);
  if (p == NcclProtocol::LL128)
    return capped(per_server < 2 ? t.ll128_fraction_one_gpu_per_server : t.ll128_fraction,
                  ll128_ceiling_per_channel(t, s.kind) * channels, simple_busbw);
  return 1.0;
}

} // namespace

ProtocolCost protocol_cost(const NcclParams& params, const CollectiveShape& s, NcclProtocol p, double bytes,
                           double simple_busbw) {
  const topology::NcclTuningSpec& t = nccl_tuning(params);
  ProtocolCost c;
  c.protocol = p;
  const auto pi = static_cast<size_t>(p);
  const bool multi = s.servers > 1;
  c.bw_fraction = bw_fraction(t, s, p, simple_busbw);
  c.base_latency_s = (s.tree ? t.tree_base_latency_s : t.ring_base_latency_s)[pi];
  c.intra_step_s = (s.tree ? t.nvlink_tree_step_s : t.nvlink_ring_step_s)[pi];
  c.inter_step_s = (s.tree ? t.net_tree_step_s : t.net_ring_step_s)[pi];
  if (multi && p == NcclProtocol::LL) c.intra_step_s *= t.ll_nvlink_step_multi_server_factor;
  // A ring across servers launches every step through the network proxy (netOverhead).
  if (multi && !s.tree && s.kind != OpKind::Broadcast) c.intra_step_s = std::max(c.intra_step_s, t.net_overhead_s[pi]);
  const double plateau_bytes =
      static_cast<double>(s.ranks) *
      (t.ring_simple_plateau_bytes_per_rank +
       t.ring_simple_plateau_bytes_per_rank_channel * static_cast<double>(std::max<int64_t>(1, s.channels)));
  if (!s.tree && p == NcclProtocol::Simple && multi && s.kind == OpKind::AllReduce && bytes >= plateau_bytes) {
    c.base_latency_s *= t.ring_simple_plateau_factor;
    c.intra_step_s *= t.ring_simple_plateau_factor;
    c.inter_step_s *= t.ring_simple_plateau_factor;
  }
  return c;
}

double protocol_latency_s(const NcclParams& params, const CollectiveShape& s, const ProtocolCost& c) {
  if (s.ranks <= 1) return 0;
  if (s.tree) {
    // tuning.cc: 2 · ((ranks per server − 1) · intra + log2(servers) · inter).
    int64_t log2_servers = 0;
    while ((int64_t{1} << (log2_servers + 1)) <= s.servers) ++log2_servers;
    const double per_server = static_cast<double>(s.ranks / std::max<int64_t>(1, s.servers));
    return c.base_latency_s +
           2.0 * ((per_server - 1) * c.intra_step_s + static_cast<double>(log2_servers) * c.inter_step_s);
  }
  auto [steps, inter] = nccl_ring_steps(s.kind, s.ranks, s.servers);
  // Some releases count 2 · servers network steps for a ring all-reduce (the set's extra);
  // NVLink steps never go below zero (NCCL's count would with one GPU per server).
  if (s.kind == OpKind::AllReduce && s.servers > 1 && params.tuning) inter += params.tuning->all_reduce_extra_net_steps;
  return c.base_latency_s + static_cast<double>(std::max<int64_t>(0, steps - inter)) * c.intra_step_s +
         static_cast<double>(inter) * c.inter_step_s;
}

ProtocolCost choose_protocol(const NcclParams& params, const CollectiveShape& s, double bytes, double simple_busbw) {
  if (!params.model_protocols) return ProtocolCost{};
  ProtocolCost best;
  double best_t = std::numeric_limits<double>::infinity();
  const double factor = nccl_bus_factor(s.kind, s.ranks);
  const topology::NcclTuningSpec& t = nccl_tuning(params);
  for (int i = 0; i < kNcclProtocols; ++i) {
    if (!t.enabled[static_cast<size_t>(i)]) continue;
    const ProtocolCost c = protocol_cost(params, s, static_cast<NcclProtocol>(i), bytes, simple_busbw);
    if (c.bw_fraction <= 0) continue;
    const double bw_s = simple_busbw > 0 ? bytes * factor / (simple_busbw * c.bw_fraction) : 0.0;
    const double t = protocol_latency_s(params, s, c) + bw_s;
    if (t < best_t) { // ties keep the earlier protocol: LL, then LL128, then Simple
      best_t = t;
      best = c;
    }
  }
  TWINSCALE_ASSERT(best_t < std::numeric_limits<double>::infinity(), "NCCL model: no protocol enabled");
  return best;
}

} // namespace twinscale::sim
