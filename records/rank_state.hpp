// The end state of one rank of a run, as every executor reports it and every reader
// reads it: how the rank stopped, what it issued on each ordered channel, the ops it
// still waits in and the peers they need, its events and its start-up phases. The real
// backend fills it from its executor, the simulator from a run with a hung rank
// (sim::SimOptions::hang_rank); diagnose/ names who waits for whom from it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "schedules/op.hpp"
#include "schedules/trace.hpp"

namespace twinscale::records {

/// How a rank stopped. Aborted: because another rank timed out or failed (or, simulated,
/// the injected hung rank itself and ranks that stopped without a pending op).
enum class RunStatus : uint8_t { Completed, TimedOut, OpFailed, Aborted };
/// "completed", "timed_out", "op_failed", "aborted".
std::string_view to_string(RunStatus);

/// An op a rank issued and that never completed: what it waits for.
struct WaitingOp {
  uint32_t op_index = 0;
  std::string name;
  schedules::OpKind kind = schedules::OpKind::Gemm;
  schedules::GroupKind group = schedules::GroupKind::World;
  schedules::Stream stream = schedules::Stream::Compute;
  /// Ordered channel of the op (schedules::communicator_of with the devices' model): a
  /// group kind for collectives ("tp", "dp", …), or "send:<group>:<peer global rank>" /
  /// "recv:<group>:<peer global rank>" for p2p (one per directed pair).
  std::string channel;
  int64_t sequence = 0;       // index of the op among the rank's ops on `channel`
  std::vector<int64_t> peers; // global ranks it needs (group members, or the peer)
  double waiting_s = 0;       // since it was issued
};

/// One timed phase of start-up (rendezvous, world, tp, dp, pp, embedding, epoch).
struct InitPhase {
  std::string name;
  double seconds = 0;
};

struct RankState {
  int64_t rank = 0;
  int64_t pid = 0;  // 0: not a process (a simulated rank)
  std::string host; // where it ran (a simulated rank: its server)
  RunStatus status = RunStatus::Completed;
  uint32_t ops_completed = 0;
  uint32_t ops_total = 0;
  double elapsed_s = 0;
  std::vector<WaitingOp> waiting;            // issued, not completed (empty if Completed)
  std::map<std::string, int64_t> issued;     // channel → ops issued on it
  std::vector<schedules::TraceEvent> events; // its ops so far (real runs)
  std::vector<InitPhase> init_phases;        // its start-up, phase by phase (real runs)
};

} // namespace twinscale::records
