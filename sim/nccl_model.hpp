// NCCL's cost model: the protocol a collective runs with (LL, LL128 or Simple), what each
// protocol costs in latency per step and in bandwidth, and which one NCCL's tuner picks
// for a message size. The figures are NCCL's own tuner constants per GPU generation
// (src/graph/tuning.cc of the release each set names), kept as data in the hardware
// catalogue (presets/hardware/nccl.toml, topology::NcclTuningSpec) and picked by the
// GPUs' compute capability; the code that uses them is ours.
//
// How the simulator uses it (sim/collective_algorithms.hpp, sim/detail/network_paths.hpp):
//  - bandwidth: a collective's wire bytes are its bytes / bw_fraction(protocol), so a
//    protocol that moves data at a quarter of the link speed (LL) takes four times as
//    long on the links of the fabric, in both modes and under contention; a protocol's
//    ceiling (LL128 and tree per channel, LL in total) lowers its fraction where it binds;
//  - latency: base latency once per collective plus, per ring step, the protocol's step
//    latency of the hop class it crosses (NVLink inside a server, network between
//    servers), counted as NCCL counts them: (steps − inter-server steps) NVLink steps
//    and inter-server steps network steps. A fabric path slower than NCCL's figure (long
//    cables) takes its own latency instead.
//  - choice: NCCL's tuner picks the protocol with the least predicted time,
//    base + steps · step latency + bytes · bus factor / (busbw · fraction), where busbw
//    is the Simple protocol's bus bandwidth of this group on an idle fabric.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "schedules/op.hpp"
#include "topology/cluster.hpp"

namespace twinscale::sim {

enum class NcclProtocol : uint8_t { LL = 0, LL128 = 1, Simple = 2 };
inline constexpr int kNcclProtocols = 3;
std::string_view to_string(NcclProtocol);

/// Per-protocol figure, indexed by NcclProtocol (LL, LL128, Simple).
using PerProtocol = std::array<double, kNcclProtocols>;

/// How the simulator runs NCCL, and overrides of the tuner figures. No figure lives here:
/// resolve_nccl takes them from the cluster's GPU generation (the catalogue's NCCL set,
/// presets/hardware/nccl.toml) unless one is set.
struct NcclParams {
  /// false: idealised collectives (tests of the fabric model): Simple protocol only, no
  /// NCCL software latency, only the fabric's path latencies.
  bool model_protocols = true;
  /// NCCL_PROTO: which protocols the tuner may pick; unset: the set's default (LL128 only
  /// where NCCL enables it for the generation).
  std::optional<std::array<bool, kNcclProtocols>> enabled;
  /// PXN (NCCL ≥ 2.12, NCCL_PXN_DISABLE=0): a transfer to a GPU on another rail first
  /// moves over NVLink to the GPU of its own server on the destination's rail and
  /// leaves through that GPU's NIC, so rings and all-to-all stay rail-local.
  bool pxn = true;
  /// The whole set of tuner figures; unset: the set of the cluster's GPUs (resolve_nccl).
  std::optional<topology::NcclTuningSpec> tuning;
  /// Per-step latencies by hop class, seconds (NCCL's hwLat); unset: the set's.
  std::optional<PerProtocol> ring_nvlink_step_s;
  std::optional<PerProtocol> ring_net_step_s;
  std::optional<PerProtocol> tree_nvlink_step_s;
  std::optional<PerProtocol> tree_net_step_s;
};

/// `params` with `tuning` set: the NCCL set of the cluster's GPUs unless given, with the
/// step latencies and protocols `params` sets written into it. A cluster of several GPU
/// generations ([[gpu_groups]]) takes the set of its lowest compute capability and
/// switches LL128 off, as NCCL does for a communicator of mixed GPUs (the table of
/// minCompCap; LL128 only when minCompCap == maxCompCap); the model resolves once per
/// cluster, so a communicator inside one group of a mixed cluster is costed the same way.
NcclParams resolve_nccl(const NcclParams& params, const topology::ClusterSpec& cluster);

/// The resolved tuner figures of `params` (resolve_nccl must have run).
const topology::NcclTuningSpec& nccl_tuning(const NcclParams& params);

/// What a collective costs beyond moving its bytes over the links, and with which
/// protocol: the output of the tuner for one call.
struct ProtocolCost {
  NcclProtocol protocol = NcclProtocol::Simple;
  double bw_fraction = 1.0;  // of the Simple protocol's bus bandwidth
  double base_latency_s = 0; // once per collective
  double intra_step_s = 0;   // per step crossing NVLink
  double inter_step_s = 0;   // per step crossing the network
};

/// The shape a collective's cost depends on.
struct CollectiveShape {
  schedules::OpKind kind = schedules::OpKind::AllReduce;
  bool tree = false; // all-reduce by double binary tree
  int64_t ranks = 0;
  int64_t servers = 0;
  int64_t channels = 1; // rings (NCCL channels) the collective uses
};

/// Steps of one ring pass as NCCL counts them: (all steps, steps crossing servers).
/// All-reduce 2(n−1) and 2(servers−1); all-gather, reduce-scatter n−1 and servers−1;
/// broadcast n and servers; all-to-all one of either kind.
std::array<int64_t, 2> nccl_ring_steps(schedules::OpKind kind, int64_t ranks, int64_t servers);

/// The cost of `shape` under protocol `p`. `simple_busbw` (bytes/s) is the Simple
/// protocol's bus bandwidth of the group on an idle fabric (for LL128's ceiling).
ProtocolCost protocol_cost(const NcclParams& params, const CollectiveShape& shape, NcclProtocol p, double bytes,
                           double simple_busbw);

/// NCCL's latency of the whole collective under `cost`: base + step latencies.
double protocol_latency_s(const NcclParams& params, const CollectiveShape& shape, const ProtocolCost& cost);

/// The tuner's choice for `bytes`: the enabled protocol with the least predicted time
/// latency + bytes · bus_factor / (simple_busbw · fraction). With model_protocols off:
/// Simple, fraction 1, no latency.
ProtocolCost choose_protocol(const NcclParams& params, const CollectiveShape& shape, double bytes, double simple_busbw);

/// nccl-tests' bus factor (PERFORMANCE.md): all-reduce 2(n−1)/n; all-gather,
/// reduce-scatter, all-to-all (n−1)/n; broadcast 1.
double nccl_bus_factor(schedules::OpKind kind, int64_t ranks);

} // namespace twinscale::sim
