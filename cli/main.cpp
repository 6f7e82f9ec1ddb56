// twinscale: one job description, lowered once, simulated or run for real.
// Exit codes (common/error.hpp): 0 ok; 1 invalid input — a twinscale::Error, whose message
// names the file, key, rank or op and what would be valid; 2 usage; 3 internal error — a
// broken invariant (std::logic_error, TWINSCALE_ASSERT) or any exception no layer typed;
// 128 + signal — interrupted by SIGINT (130), SIGTERM (143) or SIGHUP (129), children
// stopped and temporary files removed (schedules/interrupt.hpp). An MPI job whose rank
// failed (backend::MpiJobError) is ended on every rank here.
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <exception>
#include <iostream>

#include "backend/cuda/cuda_device.hpp"
#include "backend/error.hpp"
#include "backend/rendezvous.hpp"
#include "backend/work_queue.hpp"
#include "backend/work_queue_error.hpp"
#include "cli/checked_options.hpp"
#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/progress.hpp"
#include "schedules/interrupt.hpp"
#include "sim/version.hpp"

namespace {

/// The allocator's policy for this process. A simulation builds and frees tens of MB of
/// op records and per-rank tables in vectors that grow by doubling; by default glibc
/// serves each large one with a fresh mmap (every page of it faulted in anew) and gives
/// memory back as soon as it is freed. Here the heap serves them (below 256 MiB), keeps
/// freed memory for the next (trimmed only past 512 MiB free), grows in 128 MiB steps, and
/// its first step is backed by transparent huge pages where the kernel allows them on
/// request: an analytic run then takes about a tenth of the page faults. Only where
/// memory is touched is it resident; no figure a command prints depends on this.
void tune_allocator() {
  constexpr size_t kMiB = size_t{1} << 20;
  constexpr size_t kHugePage = 2 * kMiB;
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(256 * kMiB));
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(512 * kMiB));
  mallopt(M_TOP_PAD, static_cast<int>(128 * kMiB));
  const auto begin = reinterpret_cast<uintptr_t>(sbrk(0));
  void* volatile probe = malloc(kMiB); // grows the heap by its first step; kept for reuse when freed
  free(probe);
  const auto end = reinterpret_cast<uintptr_t>(sbrk(0));
  const uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1), last = end & ~(kHugePage - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE); // advice only
}

} // namespace

int main(int argc, char** argv) {
  tune_allocator();
  twinscale::schedules::install_interrupt_handlers(); // SIGINT/SIGTERM/SIGHUP: clean up, exit 128 + signal
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
  try { // an MPI run (run, probe, sweep): progress from rank 0 only
    if (twinscale::backend::detect_launch_env().rank > 0) twinscale::progress_settings().quiet = true;
  } catch (const std::exception&) { // a malformed launcher variable: reported where the command reads it
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
  } catch (const twinscale::backend::MpiJobError& e) { // the other ranks wait for this one: end them all
    std::cerr << "twinscale: error: " << e.what() << "\n";
    std::cerr.flush();
    twinscale::backend::end_mpi_job(1);
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
