// Launch environment and rendezvous: who am I (rank, world size, from mpirun, srun or a
// PMI launcher), how ranks find each other (MPI or a Redis store, M9), and how
// communication groups are initialised, with the time of each phase.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "records/rank_state.hpp"

namespace twinscale::backend {

/// Rank and world size as announced by the launcher's environment.
struct LaunchEnv {
  int64_t rank = 0;
  int64_t size = 1;
  std::string launcher; // "openmpi", "slurm", "pmi" or "none"
};

/// Reads OMPI_COMM_WORLD_RANK/SIZE, SLURM_PROCID/NTASKS, PMI_RANK/PMI_SIZE (first found).
/// Throws BackendError when a variable is present but malformed.
LaunchEnv detect_launch_env();

enum class GroupInit : uint8_t {
  Local,       // M9: each group created by its members only (local barriers, O(n))
  GlobalSplit, // baseline: split over the world + a global barrier after each group
};

struct RendezvousSpec {
  enum class Kind : uint8_t { Mpi, Redis } kind = Kind::Mpi;
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string prefix; // key namespace of this run in the store
};

/// "mpi" or "redis://HOST:PORT". Throws BackendError naming the value otherwise.
RendezvousSpec parse_rendezvous(const std::string& text);

/// One timed phase of start-up (rendezvous, world, tp, dp, pp, embedding, epoch).
using InitPhase = records::InitPhase;

} // namespace twinscale::backend
