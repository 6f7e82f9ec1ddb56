// Sub-commands of the `twinscale` CLI. Each add_* registers one sub-command on `app`; its
// callback stores the work to do in `action`, which main() runs inside one error policy:
// typed errors → message on stderr and exit 1; CLI usage errors → exit 2.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "common/progress.hpp"

namespace twinscale::cli {

using Action = std::function<int()>;
/// Exit status of a simulation whose job did not complete (a hang, a failure under a fault
/// plan): its records are written, but it has no iteration time, throughput or MFU.
inline constexpr int kExitIncomplete = 5;

/// --quiet on a command that can run long: no progress reports on stderr (by default a
/// bar on a terminal, else a line every 10 s; common/progress.hpp).
inline void add_quiet_flag(CLI::App& command) {
  command.add_flag_callback(
      "--quiet", [] { progress_settings().quiet = true; },
      "no progress reports on stderr (otherwise a bar on a terminal, a line every 10 s in a log)");
}

void add_schedule_command(CLI::App& app, Action& action);
void add_topology_command(CLI::App& app, Action& action);
void add_simulate_command(CLI::App& app, Action& action);
void add_collective_command(CLI::App& app, Action& action); // one collective, nccl-tests table
void add_fault_commands(CLI::App& app, Action& action);     // campaign, tune-checkpoint
void add_backend_commands(CLI::App& app, Action& action);   // run, compare, calibrate
void add_probe_command(CLI::App& app, Action& action);      // probe (micro-benchmarks, under mpirun)
void add_sweep_command(CLI::App& app, Action& action);      // sweep, sweep show
void add_diagnose_command(CLI::App& app, Action& action);   // stragglers, links, hangs, late launchers
void add_report_command(CLI::App& app, Action& action);     // the HTML report of a run
void add_jobs_command(CLI::App& app, Action& action);       // simulate-jobs: several jobs, one fabric
void add_trace_command(CLI::App& app, Action& action);      // trace convert, trace info (.tstrace)
void add_preset_command(CLI::App& app, Action& action);     // preset list, preset show NAME (as TOML)
/// Every sub-command above, in the order `twinscale --help` lists them (main() and the
/// Python module both register the command set through this).
void add_all_commands(CLI::App& app, Action& action);

} // namespace twinscale::cli
