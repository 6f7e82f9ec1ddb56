// Collective algorithms as step lists: which member sends how many bytes to which member,
// on which channel, in which step. The one place both simulation modes take a
// collective's traffic from: the analytic mode turns a plan into a closed form (steps ×
// (latency + bytes / rate)), the flow mode turns it into SimGrid flows (explicit steps,
// or one merged flow per transfer with the step latencies restored).
//
// Conventions follow nccl-tests (hardware.md): `bytes` is Op::bytes, i.e. the full
// buffer for all-reduce and broadcast, the full gathered size for all-gather and
// reduce-scatter, the full send buffer of one rank for all-to-all.
//
// NCCL's structure (what a plan models):
//  - Channels. NCCL runs a collective as C parallel rings (channels), each carrying
//    1/C of the bytes. With several GPUs of the group per server, each ring enters and
//    leaves a server through a different NIC, so the collective uses all of the server's
//    NICs (DGX A100, 8 × HDR: 8 × 24 = 192 GB/s per server): C is a multiple of the
//    number of distinct NICs the group's GPUs use in one server, at least the channels
//    asked for. Ring c visits the servers in group order; inside each server it visits
//    that server's members over NVLink, starting at member c mod (members there) — the
//    GPU of NIC c — so every channel enters a server on its own NIC. The hop to the next
//    server leaves on the destination's rail (PXN, network_paths.hpp).
//  - Ring (every kind): all-reduce is a reduce-scatter then an all-gather: 2(n−1) steps
//    of S/(n·C) per member and channel; all-gather and reduce-scatter n−1 steps.
//    Broadcast is a pipelined chain from member 0 along each channel's ring (S/C crosses
//    every hop once, n−1 hop latencies). All-to-all sends S/(n·C) from every member to
//    every other one on every channel, all at once.
//  - Tree (all-reduce only): NCCL's tree. Inside each server a chain through its
//    members (starting at member c mod (members) on channel c); the chain heads form a
//    double binary tree over the servers (heap order on servers, and on servers
//    reversed). Each tree carries S/2 (per channel S/(2C)); reduction up and broadcast
//    down are pipelined, so all edges carry their bytes concurrently in both
//    directions; the latency is 2·(tree depth + chain length − 1) hops.
//  - Protocol (sim/nccl_model.hpp): apply_protocol() scales the wire bytes by the
//    protocol's bandwidth fraction and attaches NCCL's latency to the phases.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/enum_names.hpp"
#include "schedules/op.hpp"
#include "sim/nccl_model.hpp"

namespace twinscale::sim {

enum class CollectiveAlgorithm : uint8_t { Ring, Tree };
inline constexpr EnumNames<CollectiveAlgorithm, 2> kCollectiveAlgorithmNames{
    {{"ring", CollectiveAlgorithm::Ring}, {"tree", CollectiveAlgorithm::Tree}}};

std::string_view to_string(CollectiveAlgorithm); // its name in kCollectiveAlgorithmNames

/// One member-to-member transfer (indices in the group's member list) on one channel.
struct PhaseTransfer {
  int32_t src = 0;
  int32_t dst = 0;
  uint32_t channel = 0;
  bool operator==(const PhaseTransfer&) const = default;
};

/// A phase: its transfers run concurrently, `steps` times in a row, each step moving
/// `bytes_per_step` over every transfer. Step k+1 of the transfer leaving member i on
/// channel c starts once step k into member i on channel c has arrived (ring
/// pipelining). The phase pays max(nccl_latency_s, latency_steps · path latency) of
/// latency in all (latency_steps ≥ steps; more for pipelined chains and trees).
struct CollectivePhase {
  std::vector<PhaseTransfer> transfers;
  int64_t steps = 1;
  double bytes_per_step = 0;
  int64_t latency_steps = 1;
  double nccl_latency_s = 0;
  bool operator==(const CollectivePhase&) const = default;
};

/// A collective as phases that run one after the other.
struct CollectivePlan {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  NcclProtocol protocol = NcclProtocol::Simple;
  double bw_fraction = 1.0; // wire bytes = payload bytes / bw_fraction
  int64_t channels = 1;     // rings (NCCL channels)
  int64_t servers = 1;      // distinct servers among the members
  std::vector<CollectivePhase> phases;
  /// Bytes each member puts on the wire in all (for tests and bus-bandwidth reports).
  double bytes_sent_per_member(int64_t group_size) const;
  bool operator==(const CollectivePlan&) const = default;
};

/// Where a group's members are, in group order: each member's server and the index of
/// its NIC inside that server (any ids; only equality matters).
struct GroupPlacement {
  std::vector<int64_t> server;
  std::vector<int64_t> nic;
};

/// The plan of collective `kind` over the members of `where`. `algorithm` applies to
/// all-reduce; other kinds always use their ring/chain/all-pairs form. `min_channels`
/// (≥ 1): channels asked for; rings use a multiple of the NICs per server at least that
/// large, all-to-all exactly that many. A group of one member gives an empty plan.
/// Throws SimError for non-collective kinds or an inconsistent placement.
CollectivePlan plan_collective(schedules::OpKind kind, const GroupPlacement& where, double bytes,
                               CollectiveAlgorithm algorithm, int min_channels);

/// The CTAs NCCL's kernel of a ring collective over `where` runs on each member's GPU,
/// one per channel it plans (NCCL 2.8–2.21, read with the search tool):
///  - across servers: its ring search (src/graph/search.cc) finds one ring per NIC the
///    members use on a server, each at about the NIC's speed (~24 GB/s for HDR, ~48 for
///    NDR, which ncclTopoDupChannels does not duplicate: below 25 GB/s, or on sm90 below
///    50 with more than 4 channels), and ncclTopoPostset (src/graph/connect.cc) doubles
///    every channel ("nChannels = min(MAXCHANNELS, nChannels*2)"): 2 per NIC, at most 32;
///  - inside one NVSwitch server: 6 rings at 40 GB/s (A100: 12 NVLinks at 20 GB/s each)
///    or 60 (H100), duplicated by ncclTopoDupChannels, doubled again: 24.
/// A group of one member runs none.
int64_t nccl_collective_ctas(const GroupPlacement& where);

/// The most channels a plan can use when `min_channels` are asked for on servers with
/// `nics_per_server` NICs (the flow backend's queue-pair endpoints per GPU).
int64_t max_plan_channels(int min_channels, int64_t nics_per_server);

/// The plan over `group_size` members, each on its own server, one channel.
CollectivePlan plan_collective(schedules::OpKind kind, int64_t group_size, double bytes, CollectiveAlgorithm algorithm);

/// A point-to-point transfer of `bytes` from member 0 to member 1, split over `channels`
/// queue pairs: one phase of one step (the closed forms of NetworkPaths::p2p_s and
/// DegradationWindows::p2p_s).
CollectivePlan p2p_plan(double bytes, int channels);

/// Puts a protocol's cost on `plan`: bytes per step / cost.bw_fraction, and
/// `latency_s` (NCCL's latency of the whole collective) spread over the phases in
/// proportion to their latency steps.
void apply_protocol(CollectivePlan& plan, const ProtocolCost& cost, double latency_s);

/// The shape NCCL's tuner sees for `plan` of `kind` over `group_size` members.
CollectiveShape collective_shape(const CollectivePlan& plan, schedules::OpKind kind, int64_t group_size);

/// Closed forms on an idle, non-blocking fabric where every member has its own link of
/// bandwidth `bw_bytes_per_s` and per-hop latency `latency_s` (the formulas the tests
/// check the simulator against).
double ring_all_reduce_seconds(int64_t n, double bytes, double bw_bytes_per_s, double latency_s);
double ring_all_gather_seconds(int64_t n, double bytes, double bw_bytes_per_s, double latency_s);

} // namespace twinscale::sim
