#include "sim/nccl_model.hpp"

#include <algorithm>
#include <limits>

#include "schedules/error.hpp"

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
  if (!p.ring_nvlink_step_s) p.ring_nvlink_step_s = cluster.gpu.nvlink.nccl_ring_step_s;
  if (!p.tree_nvlink_step_s) p.tree_nvlink_step_s = cluster.gpu.nvlink.nccl_tree_step_s;
  if (!p.ring_net_step_s) p.ring_net_step_s = cluster.server.nic.nccl_ring_step_s;
  if (!p.tree_net_step_s) p.tree_net_step_s = cluster.server.nic.nccl_tree_step_s;
  return p;
}

namespace {

double ll128_ceiling_per_channel(const NcclParams& p, OpKind kind) {
  switch (kind) {
  case OpKind::AllReduce: return p.ll128_max_bw_per_channel_all_reduce;
  case OpKind::ReduceScatter: return p.ll128_max_bw_per_channel_reduce_scatter;
  case OpKind::Broadcast: return p.ll128_max_bw_per_channel_broadcast;
  default: return p.ll128_max_bw_per_channel_all_gather;
  }
}

} // namespace

ProtocolCost protocol_cost(const NcclParams& params, const CollectiveShape& s, NcclProtocol p, double bytes,
                           double simple_busbw) {
  ProtocolCost c;
  c.protocol = p;
  const auto pi = static_cast<size_t>(p);
  const bool multi = s.servers > 1;
  const double per_server = s.servers > 0 ? static_cast<double>(s.ranks) / static_cast<double>(s.servers) : 1.0;
  if (s.tree) {
    c.bw_fraction = params.tree_fraction;
    if (p == NcclProtocol::LL) c.bw_fraction *= params.tree_ll_fraction;
    if (p == NcclProtocol::LL128)
      c.bw_fraction *= multi ? params.tree_ll128_fraction : params.tree_ll128_fraction_one_server;
    c.base_latency_s = params.tree_base_latency_s[pi];
    c.intra_step_s = params.tree_nvlink_step_s.value_or(PerProtocol{})[pi];
    c.inter_step_s = params.tree_net_step_s.value_or(PerProtocol{})[pi];
  } else {
    if (p == NcclProtocol::LL)
      c.bw_fraction = (multi || s.kind == OpKind::AllReduce) ? params.ll_fraction_all_reduce_or_multi_server
                                                             : params.ll_fraction_other;
    if (p == NcclProtocol::LL128) {
      c.bw_fraction = per_server < 2 ? params.ll128_fraction_one_gpu_per_server : params.ll128_fraction;
      const double ceiling =
          ll128_ceiling_per_channel(params, s.kind) * static_cast<double>(std::max<int64_t>(1, s.channels));
      if (simple_busbw > 0) c.bw_fraction = std::min(c.bw_fraction, ceiling / simple_busbw);
    }
    c.base_latency_s = params.ring_base_latency_s[pi];
    c.intra_step_s = params.ring_nvlink_step_s.value_or(PerProtocol{})[pi];
    c.inter_step_s = params.ring_net_step_s.value_or(PerProtocol{})[pi];
  }
  if (multi && p == NcclProtocol::LL) c.intra_step_s *= params.ll_intra_multi_server_factor;
  if (!s.tree && p == NcclProtocol::Simple && multi && s.kind == OpKind::AllReduce &&
      bytes >= static_cast<double>(s.ranks) / 16.0 * 65536.0) {
    c.base_latency_s *= params.ring_simple_plateau_factor;
    c.intra_step_s *= params.ring_simple_plateau_factor;
    c.inter_step_s *= params.ring_simple_plateau_factor;
  }
  return c;
}

double protocol_latency_s(const NcclParams&, const CollectiveShape& s, const ProtocolCost& c) {
  if (s.ranks <= 1) return 0;
  if (s.tree) {
    // tuning.cc: 2 · ((ranks per server − 1) · intra + log2(servers) · inter).
    int64_t log2_servers = 0;
    while ((int64_t{1} << (log2_servers + 1)) <= s.servers) ++log2_servers;
    const double per_server = static_cast<double>(s.ranks / std::max<int64_t>(1, s.servers));
    return c.base_latency_s +
           2.0 * ((per_server - 1) * c.intra_step_s + static_cast<double>(log2_servers) * c.inter_step_s);
  }
  const auto [steps, inter] = nccl_ring_steps(s.kind, s.ranks, s.servers);
  return c.base_latency_s + static_cast<double>(steps - inter) * c.intra_step_s +
         static_cast<double>(inter) * c.inter_step_s;
}

ProtocolCost choose_protocol(const NcclParams& params, const CollectiveShape& s, double bytes, double simple_busbw) {
  if (!params.model_protocols) return ProtocolCost{};
  ProtocolCost best;
  double best_t = std::numeric_limits<double>::infinity();
  const double factor = nccl_bus_factor(s.kind, s.ranks);
  for (int i = 0; i < kNcclProtocols; ++i) {
    if (!params.enabled[static_cast<size_t>(i)]) continue;
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
