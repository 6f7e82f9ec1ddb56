// Runs one schedule on this process's rank: MPI start-up (under mpirun or srun),
// rendezvous, communicator groups in M9's order (timed per phase), the device, the
// executor, the per-rank state file (M19) and the gathered trace. This is the whole
// public entry point of the real backend; MPI, CUDA and NCCL stay behind it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/checkpoint.hpp"
#include "backend/cpu_device.hpp"
#include "backend/executor.hpp"
#include "backend/rendezvous.hpp"
#include "schedules/schedule.hpp"
#include "schedules/trace.hpp"

namespace twinscale::backend {

enum class DeviceKind : uint8_t { Cpu, Cuda };

struct RunOptions {
  DeviceKind device = DeviceKind::Cpu;
  ExecutorOptions executor; // executor.timeout_s bounds every wait of the run
  CpuDeviceOptions cpu;
  RendezvousSpec rendezvous;
  GroupInit group_init = GroupInit::Local;
  /// Directory for rank-<r>.json state files and report.json (M19); empty: none.
  std::string run_dir;
  /// After stopping on a timeout, how long a rank waits for the other ranks' state
  /// files before it calls report_hang.
  double settle_s = 1.0;
  /// When the run did not complete and run_dir is set: called on every rank, settle_s
  /// after it stopped, with (run_dir, world, rank); analyses the state files (writing
  /// run_dir/report.json) and returns the summary this rank prints, or "". The analysis is
  /// not the executor's: the caller passes it (diagnose::report_run_dir); empty: none.
  std::function<std::string(const std::string& run_dir, int64_t world, int64_t rank)> report_hang;
  CheckpointOptions checkpoint; // M16: restore before the run, persist during it
};

struct CheckpointOutcome {
  std::optional<int64_t> restored_step;
  double restore_read_s = 0;      // this rank's shard read (DP group readers only)
  double restore_broadcast_s = 0; // the broadcast inside the DP group
  double snapshot_s = 0;          // stage 1: blocking copy to host memory
  double persist_s = 0;           // stage 2 as seen by the run: waiting for the persist
  bool committed = false;         // the manifest of options.checkpoint.step was written
};

struct RunOutcome {
  int64_t rank = 0;
  int64_t world = 0;
  std::string launcher; // from the environment: openmpi, slurm, pmi, none
  RankResult result;
  std::vector<InitPhase> init_phases;    // this rank's start-up, phase by phase
  bool all_ranks_completed = false;      // every rank completed (agreed within the timeout)
  std::optional<schedules::Trace> trace; // on rank 0 when every rank completed
  std::string report_summary;            // M19 summary, when this rank wrote report.json
  CheckpointOutcome checkpoint;
};

/// Runs `schedule` as this process's rank. Throws BackendError for bad options or a
/// launch that does not match the schedule (world size); a hang, a dead peer or a
/// failed op is a value in the outcome.
RunOutcome run_schedule(const schedules::Schedule& schedule, const RunOptions& options);

/// Ends MPI after run_schedule: MPI_Finalize when every rank completed; otherwise MPI
/// is left as it is (peers may be dead and finalising could block), and the process
/// should exit non-zero. Under mpirun, pass --enable-recovery so that one dead rank
/// does not make mpirun kill the survivors before they report (docs/backend.md).
void finalize_backend(const RunOutcome& outcome);

} // namespace twinscale::backend
