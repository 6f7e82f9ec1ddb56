// M19 on real runs: every rank writes its state to <run dir>/rank-<r>.json when it stops
// (completed, timed out or failed): what it waits for, how many ops it issued on each
// channel, and its events so far. analyse_run_dir() reads them all and names, for each
// waiting op, the peers that have not arrived, and the ranks everyone waits on that
// logged nothing (dead, or hung without reaching a timeout).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backend/executor.hpp"
#include "backend/rendezvous.hpp"

namespace twinscale::backend {

struct RankState {
  int64_t rank = 0;
  int64_t pid = 0;
  std::string host;
  RunStatus status = RunStatus::Completed;
  uint32_t ops_completed = 0;
  uint32_t ops_total = 0;
  double elapsed_s = 0;
  std::vector<PendingOp> waiting;
  std::map<std::string, int64_t> issued;
  std::vector<schedules::TraceEvent> events;
  std::vector<InitPhase> init_phases; // this rank's start-up, phase by phase
};

/// Writes <dir>/rank-<r>.json atomically (temp file, fsync, rename).
void write_rank_state(const std::string& dir, const RankState& state);
/// Reads one state file; throws BackendError naming the file on malformed content.
RankState read_rank_state(const std::string& path);

/// One waiting op of one rank and the peers it still waits for.
struct Wait {
  int64_t rank = 0;
  PendingOp op;
  std::vector<int64_t> not_arrived; // peers that did not issue the matching op
};

struct Suspect {
  int64_t rank = 0;
  bool logged_nothing = false;       // no state file: dead, or hung before any timeout
  std::vector<int64_t> waited_on_by; // ranks with a Wait naming it
};

struct HangReport {
  int64_t world = 0;
  std::vector<RankState> states; // by rank
  std::vector<int64_t> silent;   // ranks without a state file
  std::vector<Wait> waits;
  std::vector<Suspect> suspects; // most waited-on first; silent ranks before others
  bool all_completed() const;
  /// Human-readable lines (one per suspect and per waiting rank).
  std::string summary() const;
};

/// Reads every rank-<r>.json in `dir` for ranks 0..world-1. Throws BackendError when
/// the directory cannot be read or a state file is malformed.
HangReport analyse_run_dir(const std::string& dir, int64_t world);
void write_hang_report(const HangReport& report, const std::string& path);

} // namespace twinscale::backend
