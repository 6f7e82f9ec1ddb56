// The simulator's public entry point: run one schedule on a model of the cluster and
// report iteration time, throughput, MFU and where the time goes.
//
//   sim::SimOptions opts;                       // mode, seed, ECMP, algorithms…
//   sim::SimReport r = sim::simulate(schedule, fabric, gpu_of_rank, opts);
//
// Two modes share one executor (the stream semantics of schedules/schedule.hpp) and one
// collective decomposition (sim/collective_algorithms.hpp):
//  - Flow: SimGrid 3.32 (CM02, no cross-traffic) on a platform built from the fabric.
//    Every inter-server transfer is a flow on the ECMP path topology::Fabric::route()
//    picks, so flows contend on NICs and switch links. Runs in a forked child process
//    because SimGrid's engine is a process-wide singleton that cannot be re-created.
//  - Analytic: no SimGrid. A collective takes the closed form of its plan: per phase,
//    max(NCCL latency, latency_steps·path latency) + steps·bytes / rate, where a transfer's rate is the
//    tightest link on its path divided by the number of the collective's own transfers
//    (and those of its symmetric images) crossing that link. Contention between
//    different collectives is ignored.
//
// Aggregation (SimOptions::aggregate, on by default), each shortcut tested against the
// unaggregated run on small cases (tests/sim/). SimOptions::every_rank (or unequal
// SimOptions::gpu_speed factors) turns off the symmetry alone: every rank is executed at
// its GPU's speed while the closed forms and merged ring steps stay:
//  - Symmetry: when every rank of a pipeline stage runs the same program, only the ranks
//    (tp 0, dp 0, pp) are executed; other ranks behave identically because every DP/TP
//    collective synchronises them and their programs are equal. Data-parallel (and
//    embedding) collectives still put the flows of *all* images (all tp, all dp) on the
//    fabric, so ECMP contention is real; pipeline p2p flows are those of the executed
//    ranks only.
//  - TP collectives inside a server: closed form over NVSwitch (private, non-blocking
//    per GPU links: exact).
//  - Rings: one flow per member and channel carrying all steps' bytes, with the rest of
//    the phase's latency restored as a delay before the flow.
// Collectives are planned as NCCL runs them (channels over every NIC a group uses in a
// server, PXN, LL/LL128/Simple chosen by NCCL's tuner rule): collective_algorithms.hpp,
// nccl_model.hpp, docs/simulator.md "Collectives".
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/enum_names.hpp"
#include "common/helper_thread_mode.hpp"
#include "records/rank_state.hpp"
#include "schedules/schedule.hpp"
#include "schedules/trace.hpp"
#include "sim/collective_algorithms.hpp"
#include "sim/device_model.hpp"
#include "sim/error.hpp"
#include "sim/nccl_model.hpp"
#include "sim/speed_variation.hpp"
#include "topology/congestion_spec.hpp"
#include "topology/fabric.hpp"

#include "faults/fault_plan.hpp"

namespace twinscale::schedules {
struct CalibrationTable;
}

namespace twinscale::sim {

namespace detail {
struct RouteMemo;
}

enum class SimMode : uint8_t { Flow, Analytic };
inline constexpr EnumNames<SimMode, 2> kSimModeNames{{{"flow", SimMode::Flow}, {"analytic", SimMode::Analytic}}};
std::string_view to_string(SimMode); // its name in kSimModeNames

struct SimOptions {
  SimMode mode = SimMode::Flow;
  uint64_t seed = 1; // ECMP hash salt
  topology::EcmpPolicy ecmp = topology::EcmpPolicy::Hash;
  CollectiveAlgorithm all_reduce_algorithm = CollectiveAlgorithm::Ring;
  bool aggregate = true;   // symmetry + closed forms + merged ring steps (header comment)
  bool every_rank = false; // execute every rank (own GPU speed), keep the shortcuts
  /// Compute speed factor per fabric GPU (1 = nominal; 0.9: ops take 1/0.9 as long);
  /// empty: every GPU at 1. Unequal factors execute every rank.
  std::vector<double> gpu_speed;
  int channels = 2; // NCCL channels asked for: rings use a multiple of the
                    // NICs a group's GPUs use per server, at least this many
  NcclParams nccl;  // protocols (LL/LL128/Simple), latencies, PXN
  // Link efficiencies (achieved / raw) and device figures come from the cluster's parts in
  // the hardware catalogue (presets/hardware/: NVLink generation, NIC model, GPU model);
  // these replace them when set (tests, what-ifs).
  std::optional<double> nvlink_efficiency;
  std::optional<double> network_efficiency;
  DeviceModelOverrides device;
  /// Resolved by simulate (callers leave it empty): [c] is a GPU's compute rate while
  /// communication kernels of c CTAs in all run on it, 1 / (1 + slowdown) with the
  /// slowdown of the SMs they take (DeviceModelParams::nccl_slowdown of the cluster's
  /// GPU), or of device.nccl_compute_slowdown when that is set (for any c > 0).
  std::vector<double> comm_rate_factors;
  // Per-GPU speed variation (sim/speed_variation.hpp): every GPU's speed drawn per seed
  // from the catalogue's speed_sigma; compute runs at the pace of the job's slowest GPU.
  bool speed_variation = false;
  SlowHosts slow_hosts; // with speed_variation: a fraction of slow hosts (gpus_per_host set
                        // from the cluster's servers)
  const schedules::CalibrationTable* calibration = nullptr; // overrides the device model
  bool record_trace = false;                                // fill SimReport::trace
  std::vector<int64_t> trace_ranks;                         // ranks to trace (empty: every executed rank)
  /// A `.tstrace` file (schedules/binary_trace.hpp) to stream every executed rank's op
  /// events into as they complete (no SimReport::trace held in memory); empty: none.
  std::string binary_trace;
  const faults::FaultPlan* faults = nullptr; // validated plan (flow mode)
  /// Congestion control and PFC of the cluster's [network] table; the flow mode scales a
  /// flow's bytes by its controller's penalty (sim/congestion/flow_congestion.hpp).
  topology::NetworkCcSpec network;
  /// Ground truth for hang diagnosis (analytic mode, every rank): rank hang_rank stops
  /// issuing ops at simulated time hang_at_s (it issues nothing once an op would start at
  /// or after it); the run goes on until no event is left. −1: no hang.
  int64_t hang_rank = -1;
  double hang_at_s = 0;
  /// Progress with an ETA (ops done of all ops) on stderr while the run goes: a bar on a
  /// terminal, a line every 10 s otherwise, nothing when progress_settings().quiet
  /// (common/progress.hpp).
  bool show_progress = false;
  /// Flow mode: count per link direction the bytes flows carried and the time it carried
  /// any (SimReport::link_loads). Costs one route per flow; off by default.
  bool link_loads = false;
  /// Routed flows kept from one run to the next on the same fabric (make_shared_routes();
  /// a sweep keeps one per fabric), so later runs reuse earlier runs' routes. Every figure
  /// is the same with or without (only routes are kept, never a time); runs with a fault
  /// plan route afresh. Null: each run routes afresh.
  std::shared_ptr<detail::RouteMemo> shared_routes;
  /// Every-rank runs of the analytic mode execute one replica of each class of identical
  /// replicas and give the others their counterparts' figures, the same to the bit
  /// (SimReport::replica_classes, docs/simulator.md); false, or TWINSCALE_PER_OP=1 in the
  /// environment: every rank is executed.
  bool replica_classes = true;
  /// An analytic run that executes one pipeline computes its collectives' closed forms on
  /// another core while the executor is set up and runs (detail::ClosedFormPrefetch: at
  /// idle priority, on the helper thread helper_thread allows; not with a fault plan, a
  /// calibration table or shared routes). The same doubles either way; false: each is
  /// computed when first asked for.
  bool prefetch_closed_forms = true;
  /// Whether the run may use one helper thread beside its own (common/helper_thread.hpp):
  /// the lowering (config::Scenario) and the executor's set-up share their per-program
  /// work (programs, their indexes, hot records and dependency positions) with it, and
  /// the closed forms ahead run on it (prefetch_closed_forms). The same figures either
  /// way. Off: `simulate --one-thread`, and a sweep whose points run side by side.
  HelperThread helper_thread = HelperThread::WhenCoreIdle;
  /// Fill SimReport::per_rank and per_rank_breakdown (one entry per rank); a sweep, which
  /// stores neither, turns it off. No other figure depends on it.
  bool per_rank = true;
};

/// An empty store for SimOptions::shared_routes.
std::shared_ptr<detail::RouteMemo> make_shared_routes();

/// True when the environment sets TWINSCALE_PER_OP=1: runs then reuse nothing between
/// simulations (no shared routes) and cost every op on its own; results are the same
/// either way, and tests compare the two.
bool per_op_forced();

/// What one direction of a fabric link carried in a flow-mode run (SimOptions::link_loads).
struct LinkLoad {
  uint32_t link = 0; // index into topology::Fabric::links()
  bool up = true;    // direction a → b
  double bytes = 0;  // bytes of the flows that completed over it
  double busy_s = 0; // time at least one flow was on it
};

/// Where one rank's time goes over the iteration, seconds. compute + exposed_* + bubble
/// + idle = iteration time. Exposed communication = compute stream idle while a
/// communication op of that kind moves data (TP, the context-parallel ring included, before
/// EP's all-to-alls before DP before PP when several do);
/// bubble = compute idle while a pipeline receive waits for its peer, before the first
/// and after the last op of a pipelined job; idle = any other wait.
struct Breakdown {
  double compute_s = 0;
  double exposed_tp_s = 0;
  double exposed_ep_s = 0; // the MoE all-to-alls (expert parallelism)
  double exposed_pp_s = 0;
  double exposed_dp_s = 0;
  double bubble_s = 0;
  double idle_s = 0;
};

struct RankTimes {
  int64_t rank = 0;
  int64_t tp = 0, pp = 0, dp = 0;
  double forward_s = 0;   // compute ops of the forward phase
  double backward_s = 0;  // compute ops of backward and recompute
  double comm_wait_s = 0; // compute idle waiting on communication (exposed + bubble)
};

/// An op that stalled (a flow made no progress for a while) or failed (fault).
struct OpIncident {
  int64_t rank = 0;
  uint32_t op_index = 0;
  std::string name;
  bool failed = false;
  double at_s = 0;
  double stalled_s = 0;
};

struct SimReport {
  SimMode mode = SimMode::Flow;
  bool completed = true; // false when a fault failed the job
  std::string failure;   // why it did not complete
  double makespan_s = 0; // all iterations lowered into the schedule
  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0; // model FLOPs (no recomputation) per GPU, TFLOP/s
  double mfu = 0;
  Breakdown breakdown;                       // average over ranks
  std::vector<Breakdown> per_stage;          // average over the ranks of each pipeline stage
  std::vector<RankTimes> per_rank;           // every rank (symmetric runs: from its representative);
                                             // empty when SimOptions::per_rank is off
  std::vector<Breakdown> per_rank_breakdown; // every rank, same rule
  std::vector<OpIncident> incidents;
  schedules::Trace trace; // when SimOptions::record_trace
  /// Every rank's end state, by rank, when SimOptions::hang_rank ≥ 0, in the records a
  /// real run leaves (records/rank_state.hpp): ranks still waiting in an op are timed_out
  /// (they would time out), the hung rank and ranks stopped without a pending op aborted,
  /// the rest completed; pid 0, no host, no events.
  std::vector<records::RankState> hang_states;
  std::vector<LinkLoad> link_loads; // SimOptions::link_loads: directions that carried bytes, by link
  // Statistics of the run.
  bool aggregated = false; // symmetry used (one pipeline executed)
  int64_t executed_ranks = 0;
  /// An every-rank run executed by classes of identical replicas (analytic mode,
  /// docs/simulator.md): how many classes, one replica of each executed (the others'
  /// figures are their counterparts'); 0 when every rank was executed.
  int64_t replica_classes = 0;
  int64_t ops_executed = 0;
  int64_t flows = 0; // network flows put on the fabric (flow mode)
  double wall_s = 0;
};

/// Throws SimError when the schedule's hierarchical MoE all-to-all (parallel.ep_a2a =
/// "hierarchical") has an NVLink-phase group (kind ep_node) whose ranks gpu_of_rank puts on
/// more than one server: that phase would cross the network, which no library runs.
/// simulate() and simulate_jobs() call it.
void check_ep_domains(const schedules::Schedule& schedule, const topology::Fabric& fabric,
                      const std::vector<int64_t>& gpu_of_rank);

/// Each rank's host as every output of a simulated run names it (traces, run
/// directories): its GPU's server as the fabric names it (topology::Fabric::server_name,
/// "server3"); index = rank.
std::vector<std::string> host_names(const topology::Fabric& fabric, const std::vector<int64_t>& gpu_of_rank);

/// Runs `schedule` on `fabric` with rank r on GPU gpu_of_rank[r]. Throws
/// schedules::ScheduleError for a schedule that cannot run (unmatched send, deadlock,
/// collective mismatch — naming rank and op), SimError for options it cannot run
/// (naming the option or rank) or when SimGrid fails.
SimReport simulate(const schedules::Schedule& schedule, const topology::Fabric& fabric,
                   const std::vector<int64_t>& gpu_of_rank, const SimOptions& options);

} // namespace twinscale::sim
