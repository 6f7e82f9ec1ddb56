// twinscale: one job description, lowered once, simulated or run for real.
// Exit codes (common/error.hpp): 0 ok; 1 invalid input — a twinscale::Error, whose message
// names the file, key, rank or op and what would be valid; 2 usage; 3 internal error — a
// broken invariant (std::logic_error, TWINSCALE_ASSERT) or any exception no layer typed;
// 128 + signal — interrupted by SIGINT (130), SIGTERM (143) or SIGHUP (129), children
// stopped and temporary files removed (schedules/interrupt.hpp).
#include <exception>
#include <iostream>

#include "backend/cuda/cuda_device.hpp"
#include "cli/checked_options.hpp"
#include "cli/commands.hpp"
#include "common/error.hpp"
#include "schedules/interrupt.hpp"
#include "sim/version.hpp"

int main(int argc, char** argv) {
  twinscale::schedules::install_interrupt_handlers(); // SIGINT/SIGTERM/SIGHUP: clean up, exit 128 + signal
  CLI::App app{"twinscale — a digital twin of LLM-training clusters (MegaScale, NSDI'24)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] {
    return std::string("twinscale ") + TWINSCALE_VERSION + " (commit " + TWINSCALE_GIT_COMMIT +
           ", at configure time)\n" + "  " + twinscale::sim::simgrid_version() + "\n  " +
           twinscale::backend::cuda_build_versions();
  });
  twinscale::cli::Action action;
  twinscale::cli::add_schedule_command(app, action);
  twinscale::cli::add_topology_command(app, action);
  twinscale::cli::add_fault_commands(app, action);
  twinscale::cli::add_simulate_command(app, action);
  twinscale::cli::add_collective_command(app, action);
  twinscale::cli::add_backend_commands(app, action);
  twinscale::cli::add_probe_command(app, action);
  twinscale::cli::add_sweep_command(app, action);
  twinscale::cli::add_diagnose_command(app, action);
  twinscale::cli::add_report_command(app, action);
  twinscale::cli::add_jobs_command(app, action);
  twinscale::cli::add_trace_command(app, action);
  if (const std::string bad = twinscale::cli::unknown_subcommand(app, argc, argv); !bad.empty()) {
    std::cerr << "twinscale: " << bad << "\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
    twinscale::cli::require_finite_numbers(app);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const std::exception& e) { // an option's value checked while parsing (checked_options.hpp)
    std::cerr << "twinscale: error: " << e.what() << "\n";
    return 1;
  }
  try {
    return action ? action() : 0;
  } catch (const twinscale::schedules::InterruptedError& e) {
    std::cerr << "twinscale: " << e.what() << "\n";
    return 128 + e.signal();
  } catch (const twinscale::Error& e) {
    std::cerr << "twinscale: error: " << e.what() << "\n";
    return 1;
  } catch (const std::logic_error& e) {
    std::cerr << "twinscale: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "twinscale: internal error (an untyped exception): " << e.what() << "\n";
    return 3;
  }
}
