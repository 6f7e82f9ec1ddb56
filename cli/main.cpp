// twinscale: one job description, lowered once, simulated or run for real.
// Exit codes: 0 ok, 1 invalid input (the message names file, key, rank or op), 2 usage.
#include <exception>
#include <iostream>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"twinscale — a digital twin of LLM-training clusters (MegaScale, NSDI'24)"};
  app.require_subcommand(1);
  twinscale::cli::Action action;
  twinscale::cli::add_schedule_command(app, action);
  twinscale::cli::add_topology_command(app, action);
  twinscale::cli::add_fault_commands(app, action);
  twinscale::cli::add_simulate_command(app, action);
  twinscale::cli::add_backend_commands(app, action);
  twinscale::cli::add_sweep_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    return action ? action() : 0;
  } catch (const std::logic_error& e) {
    std::cerr << "twinscale: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "twinscale: error: " << e.what() << "\n";
    return 1;
  }
}
