// An explicit fault plan: events at given simulated times ("link X flaps for 3 s at
// t = 120 s", "GPU Y is 10 % slower from t until t2", "server Z crashes at t"), plus the
// NCCL/RDMA retransmit parameters (M13) that decide whether a link outage only stalls the
// flows crossing it or fails the collective (and with it the job).
//
// Parsed from TOML by config/fault_file.cpp, validated against the fabric by
// validate_plan() (names resolved to indices, contradictory overlaps rejected), and
// consumed by sim/ (SimGrid link state / bandwidth profiles, host speed profiles).
//
// Semantics every executor implements (see also simgrid-notes.md "Failures, flaps"):
//  - LinkFlap / LinkDown: the link carries nothing during [at_s, until_s). An outage of
//    length d ≤ retransmit.tolerated_outage_s() stalls the flows on the link (they make no
//    progress, then resume where they were at until_s). A longer outage stalls them until
//    at_s + tolerated_outage_s() and then fails them: the collective fails and the job
//    stops (outage_outcome()). A LinkDown with until_s = ∞ never comes back.
//  - GpuSlowdown: during [at_s, until_s) the GPU computes at speed_factor() of its normal
//    speed (slowdown 0.10 → compute ops take 1/0.9 ≈ 1.11× as long). Communication is
//    unaffected.
//  - ServerCrash: at at_s every GPU of the server stops; in-flight ops never complete,
//    flows to and from it fail after the retransmit limit. Permanent (until_s = ∞).
//  - LinkDegraded: the link carries bandwidth_factor of its bandwidth during
//    [at_s, until_s) (a bad cable or optic renegotiated to a lower rate; by default the
//    whole run: at_s = 0, until_s = ∞); every collective and p2p whose route crosses it
//    is slowed while the window lasts (analytic: its closed form uses the bandwidth in
//    effect, an op across a window edge moves its bytes before the edge at the old rate
//    and the rest at the new; flow: flows in flight change rate at the edges; see
//    sim/detail/degradation_windows.hpp and flow_engine.cpp).
//  - Jitter: GC-like pauses of the rank(s) on a GPU: in each iteration, independently
//    with `probability`, one of its compute ops drawn uniformly takes `delay_s` longer
//    (the rank stalls there). Drawn from `seed`, the GPU and the iteration: same plan,
//    same steps. For the whole run (at_s = 0).
// LinkDegraded and Jitter hit single ranks or groups, so a run with them executes every
// rank; they are the only kinds the analytic mode runs.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/enum_names.hpp"

namespace twinscale::faults {

inline constexpr double kForever = std::numeric_limits<double>::infinity();

/// RDMA retransmission as NCCL configures it (M13). The NIC waits timeout_per_retry_s for
/// an acknowledgement (4.096 µs · 2^NCCL_IB_TIMEOUT), retries `retries` times
/// (NCCL_IB_RETRY_CNT), then reports the queue pair broken and NCCL fails the collective.
struct RetransmitPolicy {
  double timeout_per_retry_s = 4.096e-6 * 16384.0; // NCCL_IB_TIMEOUT = 14: 67.1 ms
  int64_t retries = 7;                             // NCCL_IB_RETRY_CNT default

  /// The longest outage that flows survive: timeout × retries.
  double tolerated_outage_s() const { return timeout_per_retry_s * static_cast<double>(retries); }

  /// 4.096 µs · 2^exponent, the InfiniBand local ACK timeout encoding NCCL_IB_TIMEOUT uses.
  static double ib_timeout_s(int exponent) { return 4.096e-6 * static_cast<double>(1ull << exponent); }
};

enum class PlanEventKind : uint8_t {
  LinkFlap,     // link out for a short time [at_s, at_s + duration), then back
  LinkDown,     // link out from at_s until until_s (∞: for good)
  GpuSlowdown,  // GPU computes slower during [at_s, until_s)
  ServerCrash,  // every GPU of the server stops at at_s, for good
  LinkDegraded, // link at bandwidth_factor of its bandwidth during [at_s, until_s)
  Jitter,       // random per-iteration pauses of a GPU's rank (GC-like)
};

/// The names fault plans give the kinds (`kind = "link-flap"`).
inline constexpr EnumNames<PlanEventKind, 6> kPlanEventKindNames{{{"link-flap", PlanEventKind::LinkFlap},
                                                                  {"link-down", PlanEventKind::LinkDown},
                                                                  {"gpu-slowdown", PlanEventKind::GpuSlowdown},
                                                                  {"server-crash", PlanEventKind::ServerCrash},
                                                                  {"link-degraded", PlanEventKind::LinkDegraded},
                                                                  {"jitter", PlanEventKind::Jitter}}};

/// What a link outage does to the flows that cross it.
enum class OutageOutcome : uint8_t {
  Stall, // flows pause for the outage and resume: the job only loses time
  Fail,  // flows fail after tolerated_outage_s(): the collective and the job fail
};

struct PlanEvent {
  PlanEventKind kind = PlanEventKind::LinkFlap;
  std::string target;          // name as written in the plan (link, GPU or server name)
  int64_t target_index = -1;   // resolved by validate_plan(): index into Fabric::links()
                               // for links, GPU index for GPUs, server index for servers
  double at_s = 0;             // start, seconds from the start of the run
  double until_s = kForever;   // end (exclusive); LinkFlap: at_s + flap duration
  double slowdown = 0;         // GpuSlowdown only: fraction of speed lost, in (0, 1)
  double bandwidth_factor = 1; // LinkDegraded only: remaining fraction of bandwidth, (0, 1)
  double probability = 0;      // Jitter only: chance per iteration of a pause, (0, 1]
  double delay_s = 0;          // Jitter only: length of one pause, seconds > 0
  uint64_t seed = 1;           // Jitter only: which iterations and ops pause

  double duration_s() const { return until_s - at_s; }
  /// GpuSlowdown: relative compute speed during the event (1 − slowdown).
  double speed_factor() const { return 1.0 - slowdown; }
  bool is_link_outage() const { return kind == PlanEventKind::LinkFlap || kind == PlanEventKind::LinkDown; }
  /// Kinds that hit single ranks or groups (every rank must be executed; analytic mode ok).
  bool is_rank_specific() const { return kind == PlanEventKind::LinkDegraded || kind == PlanEventKind::Jitter; }
};

struct FaultPlan {
  RetransmitPolicy retransmit;
  std::vector<PlanEvent> events; // sorted by (at_s, kind, target_index) once validated
};

/// Stall or fail for an outage of `outage_s` seconds under `retransmit`.
inline OutageOutcome outage_outcome(double outage_s, const RetransmitPolicy& retransmit) {
  return outage_s <= retransmit.tolerated_outage_s() ? OutageOutcome::Stall : OutageOutcome::Fail;
}

/// When the flows of a link outage fail (∞ if they only stall): at_s + tolerated_outage_s()
/// for an outage longer than the tolerated one.
inline double outage_failure_time_s(const PlanEvent& e, const RetransmitPolicy& retransmit) {
  if (!e.is_link_outage()) return kForever;
  return outage_outcome(e.duration_s(), retransmit) == OutageOutcome::Fail ? e.at_s + retransmit.tolerated_outage_s()
                                                                           : kForever;
}

const char* to_string(PlanEventKind kind);

class PlanTargets;

/// Whether `plan` has an event of a kind that is_rank_specific().
bool has_rank_specific_events(const FaultPlan& plan);

/// Whether `plan` has only rank-specific events (the ones the analytic mode runs).
bool only_rank_specific_events(const FaultPlan& plan);

/// Checks a plan and resolves its names: times finite and ordered, slowdowns in (0, 1),
/// retransmit parameters positive, every target known to `targets` (target_index set),
/// no contradictory overlap (two outages of one link at once — a flap while the link is
/// down included —, two slowdowns of one GPU at once, a server crashing twice, a link
/// degraded by two events at once, two jitters of one GPU; jitter that does not span the
/// whole run; factors, probabilities, delays out of range). Then sorts
/// the events. Throws FaultError naming the event ("event[3]", its index as written) and
/// what would be valid.
void validate_plan(FaultPlan& plan, const PlanTargets& targets);

} // namespace twinscale::faults
