// One point of a study: apply its axis values to the base job and cluster, check
// divisibility (schedules::check_job) and memory, then lower, or simulate one iteration
// on the setup `twinscale simulate` builds (config::Scenario: the cluster's [network]
// congestion control and [[gpu_groups]] memory limits included).
// A point that cannot run is a result ("infeasible" or "failed" with the reason), not an
// error: only a bad study (an unreadable base job or cluster) throws.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "study/points.hpp"
#include "study/study_spec.hpp"

namespace twinscale::topology {
class Fabric;
struct ClusterSpec;
} // namespace twinscale::topology
namespace twinscale::schedules {
struct JobSpec;
struct Schedule;
struct LoweringTarget;
} // namespace twinscale::schedules
namespace twinscale::config {
struct ClusterFile;
struct KeyOverride;
} // namespace twinscale::config
namespace twinscale::sim::detail {
struct RouteMemo;
}

namespace twinscale::study {

enum class PointStatus : uint8_t { Ok, Infeasible, Failed };
std::string_view to_string(PointStatus);
PointStatus point_status_from(std::string_view); // throws StoreError (study/error.hpp)

/// What one point gave. Doubles are exact (no rounding) so that a store filled in any
/// order, by any number of processes, holds the same bytes.
struct PointResult {
  int64_t id = 0;
  PointStatus status = PointStatus::Ok;
  std::string reason; // why infeasible or failed; "" when ok
  // the effective job (after the axes); dp counts data-parallel replicas (cp not included),
  // ep the ranks among which the experts are spread; cp and ep are 0 in a row read from a
  // store that predates them (schema version 1, study/store.hpp)
  int64_t gpus = 0, tp = 0, cp = 0, ep = 0, pp = 0, vpp = 0, dp = 0, micro_batch = 0, global_batch = 0;
  double memory_bytes = 0;     // largest pipeline stage, per GPU (estimate_memory)
  double gpu_memory_bytes = 0; // of the cluster's GPU
  int64_t ops = 0;             // ops in the lowered schedule (what = lower or simulate)
  // one simulated iteration (what = simulate; 0 otherwise)
  std::string mode; // "analytic" | "flow" | ""
  double iteration_time_s = 0, tokens_per_s = 0, tflops_per_gpu = 0, mfu = 0;
  // exposed_ep_s: the MoE all-to-alls, apart from TP (sim::Breakdown)
  double compute_s = 0, exposed_tp_s = 0, exposed_ep_s = 0, exposed_pp_s = 0, exposed_dp_s = 0, bubble_s = 0;
  // weeks of training under faults (what = campaign; means over seeds)
  bool campaign = false;
  double ettr = 0, ettr_ci95 = 0; // effective training time ratio, 95 % CI half-width
  double interruptions = 0;       // per run
  double lost_work_s = 0;         // work rolled back per run
  /// What "best" ranks by: MFU, times ETTR for a campaign (useful FLOPs over wall time).
  double score() const { return campaign ? mfu * ettr : mfu; }
};

/// Serialisation for the MPI work queue (exact doubles).
std::string to_json(const PointResult& r);
PointResult point_result_from_json(const std::string& text);

class Evaluator {
public:
  explicit Evaluator(const StudySpec& spec);
  ~Evaluator();
  /// The study's evaluation of `point` ([evaluate] what and mode).
  PointResult evaluate(const Point& point);
  /// The flow-mode re-simulation of a point (flow_best).
  PointResult evaluate_flow(const Point& point);
  /// Whether a point's lowering and executor set-up may share their work with a helper
  /// thread (SimOptions::helper_thread; on by default): off where points already run side
  /// by side (sweep --threads, several MPI ranks).
  void set_helper_thread(bool on) { helper_thread_ = on; }

private:
  PointResult run(const Point& point, bool flow);
  /// The fabric of a cluster variant (cached), or nullptr with the reason it cannot be built.
  /// `variant_key`: the point's cluster axes (the cluster's own figures are keyed too).
  std::shared_ptr<const topology::Fabric> fabric_for(const std::string& cluster, const std::string& variant_key,
                                                     const topology::ClusterSpec& cs, std::string& why_not);
  /// The cluster preset or file `name` with `edits` made to its document, read once per
  /// study; nullptr with the reason when the edits do not fit it (the point is infeasible).
  std::shared_ptr<const config::ClusterFile> cluster_file(const std::string& name, int64_t point_id,
                                                          const std::vector<config::KeyOverride>& edits,
                                                          std::string& why_not);
  /// The point's cluster: `cluster` with the point's cluster axes (catalogue models made to
  /// its document, the other keys through their setters); `variant_key` names them (for the
  /// fabric cache). nullptr with the reason when the edited document cannot be read.
  std::shared_ptr<config::ClusterFile> cluster_variant(const Point& point, const std::string& cluster,
                                                       std::string& variant_key, std::string& why_not);
  void run_campaign(const Point& point, const schedules::JobSpec& job, int64_t gpus_per_node, PointResult& r) const;
  /// The point's job lowered against `target`: from the cache of recent schedules when a
  /// point with the same lowering inputs (every axis but those of the cluster, placement
  /// and campaign, and the target) lowered it, else lowered now and kept.
  std::shared_ptr<const schedules::Schedule> lowered(const Point& point, const schedules::JobSpec& job,
                                                     const schedules::LoweringTarget& target);
  const StudySpec spec_;
  std::shared_ptr<const void> campaign_inputs_; // fault model + recovery policy (campaign studies)
  std::map<std::string, std::shared_ptr<const config::ClusterFile>> clusters_; // each file read once
  std::map<std::string, std::shared_ptr<const topology::Fabric>> fabrics_;     // a few recent fabrics
  std::vector<std::string> fabric_order_;
  /// Routed flows of each fabric in fabrics_, kept from point to point (sim::SimOptions::
  /// shared_routes) and dropped with their fabric.
  std::map<const topology::Fabric*, std::shared_ptr<sim::detail::RouteMemo>> routes_;
  bool helper_thread_ = true; // set_helper_thread
  /// Recent schedules by lowering key (lowered()), the newest last; used only when the
  /// study varies an axis lowering does not read (otherwise no two points share one).
  bool share_schedules_ = false;
  std::vector<std::pair<std::string, std::shared_ptr<const schedules::Schedule>>> schedules_;
};

/// Evaluates points[todo[k]] for every k on `threads` threads, each with an Evaluator of
/// its own (its own caches: no state is shared but the read-only study and points), and
/// hands each result to `on_result` on the calling thread in todo's order, so that a store
/// is written in the same order as by one thread. `threads` ≤ 1 evaluates on the calling
/// thread with `own` (whose caches then serve the caller's later points too). Analytic evaluation only: a flow-mode run needs SimGrid's process-wide engine
/// (study_runs_in_threads() says which studies may). An exception in a worker (or in
/// `on_result`) stops the others after their current point and is rethrown here, after
/// the results before it were handed on.
void evaluate_in_threads(Evaluator& own, const StudySpec& spec, const std::vector<Point>& points,
                         const std::vector<int64_t>& todo, int threads,
                         const std::function<void(const Point&, const PointResult&)>& on_result);

/// Whether a study's points may be evaluated on several threads: its evaluation runs no
/// flow-mode simulation (the flow re-simulation of the best points, flow_best, runs after
/// them, on one thread).
bool study_runs_in_threads(const StudySpec& spec);

} // namespace twinscale::study
