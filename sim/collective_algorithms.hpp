// Collective algorithms as step lists: which member sends how many bytes to which member,
// in which step. The one place both simulation modes take a collective's traffic from:
// the analytic mode turns a plan into a closed form (steps × (latency + bytes / rate)),
// the flow mode turns it into SimGrid flows (explicit steps, or one merged flow per
// transfer with the step latencies restored).
//
// Conventions follow nccl-tests (hardware.md): `bytes` is Op::bytes, i.e. the full
// buffer for all-reduce and broadcast, the full gathered size for all-gather and
// reduce-scatter, the full send buffer of one rank for all-to-all.
//
// Algorithms:
//  - Ring (every kind): members form the ring 0 → 1 → … → n−1 → 0. All-reduce is a
//    reduce-scatter then an all-gather: 2(n−1) steps of S/n per member; all-gather and
//    reduce-scatter n−1 steps of S/n. Broadcast is a pipelined chain from member 0
//    (S crosses every hop once, n−1 hop latencies). All-to-all sends S/n from every
//    member to every other one, all at once.
//  - Tree (all-reduce only): NCCL's double binary tree. Two binary trees (heap order on
//    members, and on members reversed) each carry S/2; reduction up and broadcast down
//    are pipelined, so all tree edges carry their S/2 concurrently; the latency is
//    2·depth hops.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "schedules/op.hpp"

namespace twinscale::sim {

enum class CollectiveAlgorithm : uint8_t { Ring, Tree };

std::string_view to_string(CollectiveAlgorithm);

/// One member-to-member transfer (indices in the group's member list).
struct PhaseTransfer {
  int32_t src = 0;
  int32_t dst = 0;
};

/// A phase: its transfers run concurrently, `steps` times in a row, each step moving
/// `bytes_per_step` over every transfer. Step k+1 of the transfer leaving member i starts
/// once step k into member i has arrived (ring pipelining). The phase pays
/// `latency_steps` path latencies in all (≥ steps; more for pipelined chains and trees).
struct CollectivePhase {
  std::vector<PhaseTransfer> transfers;
  int64_t steps = 1;
  double bytes_per_step = 0;
  int64_t latency_steps = 1;
};

/// A collective as phases that run one after the other.
struct CollectivePlan {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  std::vector<CollectivePhase> phases;
  /// Bytes each member sends in all (for tests and bus-bandwidth reports).
  double bytes_sent_per_member(int64_t group_size) const;
};

/// The plan of collective `kind` over `group_size` members. `algorithm` applies to
/// all-reduce; other kinds always use their ring/chain/all-pairs form. A group of one
/// member gives an empty plan. Throws SimError for non-collective kinds.
CollectivePlan plan_collective(schedules::OpKind kind, int64_t group_size, double bytes,
                               CollectiveAlgorithm algorithm);

/// Closed forms on an idle, non-blocking fabric where every member has its own link of
/// bandwidth `bw_bytes_per_s` and per-hop latency `latency_s` (the formulas the tests
/// check the simulator against).
double ring_all_reduce_seconds(int64_t n, double bytes, double bw_bytes_per_s, double latency_s);
double ring_all_gather_seconds(int64_t n, double bytes, double bw_bytes_per_s, double latency_s);

} // namespace twinscale::sim
