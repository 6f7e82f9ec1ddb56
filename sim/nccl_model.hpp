// NCCL's cost model: the protocol a collective runs with (LL, LL128 or Simple), what each
// protocol costs in latency per step and in bandwidth, and which one NCCL's tuner picks
// for a message size. Every figure is a micro-level fact with its source beside it: the
// constants NCCL's own tuner uses for Ampere (NCCL 2.8–2.10, src/graph/tuning.cc, read
// with the search tool; the numbers are NCCL's, the code is ours) and nccl-tests
// measurements (../shared/reference/hardware.md).
//
// How the simulator uses it (sim/collective_algorithms.hpp, sim/detail/network_paths.hpp):
//  - bandwidth: a collective's wire bytes are its bytes / bw_fraction(protocol), so a
//    protocol that moves data at a quarter of the link speed (LL) takes four times as
//    long on the links of the fabric, in both modes and under contention;
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

/// The figures of NCCL's tuner (seconds, bytes/s, fractions). Software figures (per
/// collective latency, protocol bandwidth fractions) default to NCCL 2.8–2.10
/// src/graph/tuning.cc for compute capability 8.0 (A100); hardware figures (the latency
/// of a step over NVLink or through a NIC) come from the hardware catalogue's NVLink and
/// NIC entries (presets/hardware/{nvlink,nics}.toml) unless set here.
struct NcclParams {
  /// false: idealised collectives (tests of the fabric model): Simple protocol only, no
  /// NCCL software latency, only the fabric's path latencies.
  bool model_protocols = true;
  /// NCCL_PROTO: which protocols the tuner may pick. LL128 is on by default only on
  /// Volta/Ampere with NVLink (tuning.cc, "protoEnable").
  std::array<bool, kNcclProtocols> enabled{true, true, true};
  /// PXN (NCCL ≥ 2.12, NCCL_PXN_DISABLE=0): a transfer to a GPU on another rail first
  /// moves over NVLink to the GPU of its own server on the destination's rail and
  /// leaves through that GPU's NIC, so rings and all-to-all stay rail-local.
  bool pxn = true;

  // Latency, seconds. tuning.cc "baseLat" (per collective, software).
  PerProtocol ring_base_latency_s{3.6e-6, 10.0e-6, 8.4e-6};
  PerProtocol tree_base_latency_s{4.4e-6, 4.4e-6, 0.0};
  // Per step by hop class (tuning.cc "hwLat"): from the catalogue (resolve_nccl) unless set.
  std::optional<PerProtocol> ring_nvlink_step_s;
  std::optional<PerProtocol> ring_net_step_s;
  std::optional<PerProtocol> tree_nvlink_step_s;
  std::optional<PerProtocol> tree_net_step_s;
  /// LL's NVLink step latency is 1.8× when the communicator spans servers (tuning.cc).
  double ll_intra_multi_server_factor = 1.8;
  /// Ring Simple all-reduce across servers: latency × 1.9 from bytes ≥ ranks/16 · 64 KiB
  /// on ("plateau effect of ring", ncclTopoGetAlgoTime).
  double ring_simple_plateau_factor = 1.9;

  // Bandwidth fractions of the Simple protocol's bus bandwidth (tuning.cc).
  /// LL: 8-byte lines carrying 4 bytes of data and a flag; NCCL models a quarter of the
  /// bandwidth for all-reduce or across servers, a third otherwise.
  double ll_fraction_all_reduce_or_multi_server = 1.0 / 4.0;
  double ll_fraction_other = 1.0 / 3.0;
  /// LL128: 120 data bytes per 128-byte line (0.92); 0.7 with one GPU per server (the
  /// same GPU sends and receives through the NIC).
  double ll128_fraction = 0.92;
  double ll128_fraction_one_gpu_per_server = 0.7;
  /// LL128 per-channel ceiling, bytes/s ("ll128MaxBwPerCh": broadcast 18.8, all-gather
  /// 18.3, reduce-scatter 15.2, all-reduce 16.7 GB/s); all-to-all as all-gather.
  double ll128_max_bw_per_channel_all_reduce = 16.7e9;
  double ll128_max_bw_per_channel_all_gather = 18.3e9;
  double ll128_max_bw_per_channel_reduce_scatter = 15.2e9;
  double ll128_max_bw_per_channel_broadcast = 18.8e9;
  /// Tree: 0.9 of the ring's bus bandwidth (Simple); LL 1/3.8 of that; LL128 0.915
  /// across servers, 7/9 inside one.
  double tree_fraction = 0.9;
  double tree_ll_fraction = 1.0 / 3.8;
  double tree_ll128_fraction = 0.915;
  double tree_ll128_fraction_one_server = 7.0 / 9.0;
};

/// `params` with the step latencies it leaves unset taken from `cluster`'s parts: its
/// GPU's NVLink generation and its servers' NIC model (hardware catalogue).
NcclParams resolve_nccl(const NcclParams& params, const topology::ClusterSpec& cluster);

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
