// The results store of a study: one SQLite file, one row per point with its inputs
// (axis values as JSON and the effective parallel layout), its outputs and the twinscale
// version. Every point is committed in its own transaction (WAL journal), so a kill -9
// loses at most the points being computed; reopening the same study resumes, and a
// store made by a different study (fingerprint) is refused. Several processes (Slurm
// array shards) may write one store on a file system with working POSIX locks.
//
// Tables (names are stable; `sqlite3 DB` works on them directly):
//   meta(key TEXT PRIMARY KEY, value TEXT): name, fingerprint, study_file, points, axes
//     (JSON array of axis names), flow_best, twinscale_version, schema_version. An axis is
//     named as study/axes.hpp names it: a short axis ("tp", also when the study spelt it
//     "job.parallel.tp") or the key as written ("job.model.layers", "cluster.switch.radix");
//     `inputs` keys its values by the same names, so `sweep show` (axis_<name> columns)
//     and the report show them without a column per key, and a store of either kind opens.
//   points(id INTEGER PRIMARY KEY, inputs TEXT, status TEXT, reason TEXT, gpus, tp, cp,
//     ep, pp, vpp, dp, micro_batch, global_batch, memory_bytes, gpu_memory_bytes, ops,
//     mode, iteration_time_s, tokens_per_s, tflops_per_gpu, mfu, compute_s, exposed_tp_s,
//     exposed_ep_s, exposed_pp_s, exposed_dp_s, bubble_s, flow_status, flow_reason,
//     flow_iteration_time_s, flow_tokens_per_s, flow_mfu, flow_exposed_dp_s, ettr,
//     ettr_ci95, interruptions, lost_work_s, twinscale_version); flow_* are NULL until
//     the point is re-simulated in flow mode, ettr … lost_work_s unless what = campaign.
//     dp counts data-parallel replicas (gpus = tp·cp·pp·dp), ep the ranks the experts are
//     spread over; exposed_tp_s is TP's exposed communication, exposed_ep_s the MoE
//     all-to-alls'.
//
// Schema versions (meta schema_version; absent means 1): version 1 had no cp, ep or
// exposed_ep_s and its exposed_tp_s held TP and EP time together. `sweep show` reads
// both (a version 1 row has cp and ep 0, unknown); a study adds rows only to a store of
// the current version and refuses an older one with a message naming its version.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "study/error.hpp"
#include "study/evaluate.hpp"
#include "study/points.hpp"
#include "study/study_spec.hpp"

struct sqlite3;

namespace twinscale::study {

/// The schema version of the store this twinscale writes (see the file comment).
inline constexpr int64_t kStoreSchemaVersion = 2;

/// The twinscale version written into every row.
std::string twinscale_version();

struct StoredPoint {
  PointResult result;
  std::string inputs;              // JSON object of the axis values
  std::optional<PointResult> flow; // the flow re-simulation, when done
  std::string version;
};

struct StoreInfo {
  std::string name, fingerprint, study_file, version;
  int64_t points = 0;
  int64_t flow_best = 0;
  std::vector<std::string> axes;
  int64_t schema_version = kStoreSchemaVersion; // of the points table
};

class Store {
public:
  /// Opens (creating if needed) the store of `spec` at `path`. Throws StoreError for an
  /// unusable file and config::ConfigError when the store belongs to another study.
  Store(const std::string& path, const StudySpec& spec, const std::vector<Point>& points);
  /// Opens an existing store to read it (for `sweep show`); writes nothing. A file that
  /// is not a regular file, or whose tables are not the plain ones `sweep` makes (a
  /// view, a generated column, a default), is refused with a StoreError; so is a read
  /// that takes more SQLite steps than a store of the file's size can need.
  explicit Store(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  std::set<int64_t> done() const;      // points with a row
  std::set<int64_t> flow_done() const; // points with a flow re-simulation
  /// Inserts the row of a point (ignored if the point already has one), one transaction.
  void put(const Point& point, const PointResult& result);
  /// Records the flow re-simulation of a point that has a row, one transaction.
  void put_flow(const PointResult& flow);

  StoreInfo info() const;
  std::vector<StoredPoint> rows() const; // ordered by id

private:
  /// Throws StoreError: point `id` has two rows (a damaged file).
  [[noreturn]] void throw_repeated_point(int64_t id) const;
  void exec(const std::string& sql) const;
  std::string path_;
  sqlite3* db_ = nullptr;
  int64_t budget_[2] = {0, 0}; // reader: SQLite progress calls so far, and the most allowed
  int64_t schema_version_ = kStoreSchemaVersion;
};

} // namespace twinscale::study
