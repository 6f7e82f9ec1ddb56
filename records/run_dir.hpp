// A run directory's rank states: every rank that stops (completed, timed out, failed or
// aborted) leaves <dir>/rank-<r>.json, written atomically, and any reader (diagnose/,
// tests) reads it back. Real runs (backend/) and simulated hangs (twinscale simulate
// --hang-rank --run-dir) write the same files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "records/rank_state.hpp"

namespace twinscale::records {

/// <dir>/rank-<rank>.json
std::string rank_state_path(const std::string& dir, int64_t rank);

/// Writes <dir>/rank-<r>.json atomically (temp file, fsync, rename), creating `dir` if
/// needed. Throws RecordError naming the file when it cannot be written.
void write_rank_state(const std::string& dir, const RankState& state);

/// Writes every state's <dir>/rank-<r>.json, each atomically, all made durable by one sync
/// (schedules::OutputFileBatch): a simulated hang's thousands of files. Throws RecordError
/// naming the file when one cannot be written; files not yet in place are then removed.
void write_rank_states(const std::string& dir, const std::vector<RankState>& states);

/// Reads one state file. Throws RecordError naming the file when it cannot be opened or
/// its content is malformed (a missing key, an unknown status, op kind, group or stream).
RankState read_rank_state(const std::string& path);

} // namespace twinscale::records
