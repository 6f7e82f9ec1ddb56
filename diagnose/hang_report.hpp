// Hang analysis of a run directory: every rank that stopped left its state
// (records/run_dir.hpp: rank-<r>.json, from a real run or a simulated hang).
// analyse_run_dir() reads them all and names, for each waiting op, the peers that have not
// arrived, and the ranks everyone waits on that logged nothing (dead, or hung without
// reaching a timeout). add_hang_evidence() hands the same reading to the diagnosis
// (RunData::hang); report_run_dir() is what a real run calls once it stopped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "records/rank_state.hpp"

namespace twinscale::diagnose {

struct RunData;

/// One waiting op of one rank and the peers it still waits for.
struct Wait {
  int64_t rank = 0;
  records::WaitingOp op;
  std::vector<int64_t> not_arrived; // peers that did not issue the matching op
};

struct Suspect {
  int64_t rank = 0;
  bool logged_nothing = false;       // no state file: dead, or hung before any timeout
  std::vector<int64_t> waited_on_by; // ranks with a Wait naming it
};

struct HangReport {
  int64_t world = 0;
  std::vector<records::RankState> states; // by rank
  std::vector<int64_t> silent;            // ranks without a state file
  std::vector<Wait> waits;
  std::vector<Suspect> suspects; // most waited-on first; silent ranks before others
  bool all_completed() const;
  /// Human-readable lines (one per suspect and per waiting rank).
  std::string summary() const;
};

/// Reads every rank-<r>.json in `dir` for ranks 0..world-1. Throws DiagnoseError when
/// the directory does not exist or a file holds another rank, RecordError when a state
/// file is malformed.
HangReport analyse_run_dir(const std::string& dir, int64_t world);
/// report.json: world, suspects, waits and every rank's status. Throws DiagnoseError
/// naming the file when it cannot be written.
void write_hang_report(const HangReport& report, const std::string& path);

/// After a real run stopped: analyses `dir` for `world` ranks and writes dir/report.json;
/// returns the summary when `rank` is the lowest rank that logged a state (the one that
/// prints it), else "".
std::string report_run_dir(const std::string& dir, int64_t world, int64_t rank);

/// Fills data.hang from the run directory `dir` of `world` ranks (who logged, who did
/// not complete, who waits on whom) and the hosts of the ranks from their states; a
/// run without a trace gets one empty series per rank.
void add_hang_evidence(const std::string& dir, int64_t world, RunData& data);

} // namespace twinscale::diagnose
