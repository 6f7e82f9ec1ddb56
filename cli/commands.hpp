// Sub-commands of the `twinscale` CLI. Each add_* registers one sub-command on `app`; its
// callback stores the work to do in `action`, which main() runs inside one error policy:
// typed errors → message on stderr and exit 1; CLI usage errors → exit 2.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace twinscale::cli {

using Action = std::function<int()>;
/// Exit status of a simulation whose job did not complete (a hang, a failure under a fault
/// plan): its records are written, but it has no iteration time, throughput or MFU.
inline constexpr int kExitIncomplete = 5;

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
/// Every sub-command above, in the order `twinscale --help` lists them (main() and the
/// Python module both register the command set through this).
void add_all_commands(CLI::App& app, Action& action);

} // namespace twinscale::cli
