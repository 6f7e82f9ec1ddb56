// The `twinscale` command set, registered once: the executable (main.cpp) and the Python
// module (python/) build the same sub-commands from here, so they cannot differ.
#include "cli/commands.hpp"

namespace twinscale::cli {

void add_all_commands(CLI::App& app, Action& action) {
  add_schedule_command(app, action);
  add_topology_command(app, action);
  add_fault_commands(app, action);
  add_simulate_command(app, action);
  add_collective_command(app, action);
  add_backend_commands(app, action);
  add_probe_command(app, action);
  add_sweep_command(app, action);
  add_diagnose_command(app, action);
  add_report_command(app, action);
  add_jobs_command(app, action);
  add_trace_command(app, action);
  add_preset_command(app, action);
}

} // namespace twinscale::cli
