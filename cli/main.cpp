// twinscale: one job description, lowered once, simulated or run for real.
// Exit codes (common/error.hpp): 0 ok; 1 invalid input — a twinscale::Error, whose message
// names the file, key, rank or op and what would be valid; 2 usage; 3 internal error — a
// broken invariant (std::logic_error, TWINSCALE_ASSERT) or any exception no layer typed.
#include <exception>
#include <iostream>

#include "backend/cuda/cuda_device.hpp"
#include "cli/checked_options.hpp"
#include "cli/commands.hpp"
#include "common/error.hpp"
#include "sim/version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"twinscale — a digital twin of LLM-training clusters (MegaScale, NSDI'24)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] {
    return std::string("twinscale ") + TWINSCALE_VERSION + " (commit " + TWINSCALE_GIT_COMMIT +
           ", at configure time)\n" + "  " + twinscale::sim::simgrid_version() + "\n  " +
           twinscale::backend::cuda_build_versions();
  });
  twinscale::cli::Action action;
  twinscale::cli::add_all_commands(app, action);
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
