// Reading what a run left, for `diagnose` and `report`: a Chrome trace, a per-rank CSV,
// a run directory (trace.json and the rank-<r>.json states of records/run_dir.hpp),
// or PyTorch profiler (Kineto) traces: one file per rank, given as files or a directory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "diagnose/run_data.hpp"

namespace twinscale::cli {

struct DiagnoseInputOptions {
  int64_t gpus_per_host = 8;
  int64_t world = 0; // run directories: 0 = from the rank-<r> files
  std::optional<schedules::Layout> layout;
  std::string links; // link CSV of a flow-mode run (simulate --link-csv)
};

/// Throws diagnose::DiagnoseError (or the trace reader's error) naming the path.
diagnose::RunData read_run(const std::string& path, const DiagnoseInputOptions& options);

/// The run of `paths`: several Kineto files are the ranks of one run; any other paths are
/// successive steps of one job (read_run of each, appended).
diagnose::RunData read_runs(const std::vector<std::string>& paths, const DiagnoseInputOptions& options);

void add_diagnose_input_options(CLI::App& cmd, DiagnoseInputOptions& options);

} // namespace twinscale::cli
