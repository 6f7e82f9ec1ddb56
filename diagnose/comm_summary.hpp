// What the communication detectors (late launchers, slow links) need of a trace's
// communication ops, reduced as the ops stream by: per rank and step the span of its
// communication and its last collective launch (M20), and per collective instance of
// each TP/DP group its transfer time (last member's arrival to the end). A Chrome trace's
// CommEvents and a 12,288-rank binary trace's rank blocks go through the same reducer,
// so the detectors are the same whatever the input; the reduction of a binary trace
// stays small (a TP group's instances are closed once its consecutive ranks are read).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "schedules/layout.hpp"
#include "schedules/op.hpp"

namespace twinscale::diagnose {

/// One rank's communication in one step.
struct StepComms {
  bool any = false; // a communication op (TP, DP, PP or CP stream) in this step
  double first_start = 0, last_end = 0;
  bool collective = false; // a TP/DP collective in this step
  uint32_t last_op = 0;    // the last collective launched: highest op index…
  double last_start = 0;   // …and its start
  int32_t ops = 0;         // communication ops of this rank in this step…
  int32_t failed = 0;      // …of which the trace marks this many failed
};

/// Instance `occurrence` (index among the rank's ops of `stream` in `step`) of a TP or
/// DP group, named by its first member (`leader`).
struct CollectiveTime {
  double transfer_s = 0; // end − last member's start
  int32_t step = 0;
  int32_t occurrence = 0;
  int32_t leader = 0;
  uint32_t name : 24 = 0; // index in CommSummary::names
  uint32_t stream : 8 = 0;
};

/// The order of CommSummary::collectives: (stream, step, occurrence, leader).
inline bool instance_order(const CollectiveTime& a, const CollectiveTime& b) {
  if (a.stream != b.stream) return a.stream < b.stream;
  if (a.step != b.step) return a.step < b.step;
  if (a.occurrence != b.occurrence) return a.occurrence < b.occurrence;
  return a.leader < b.leader;
}

struct CommSummary {
  bool present = false;                      // the trace has communication ops
  std::vector<std::vector<StepComms>> steps; // [rank][step]
  /// Slow links need each collective's group: false without a layout or when the
  /// layout does not match the trace (note says which).
  bool grouped = false;
  std::string note;
  std::vector<CollectiveTime> collectives; // sorted by (stream, step, occurrence, leader)
  std::vector<std::string> names;
};

/// Feeds on communication ops in ascending rank order (per reducer); two reducers of
/// disjoint rank ranges split at a TP-group boundary merge into one.
class CommReducer {
public:
  /// `layout` (when it matches `world` ranks) groups collectives for slow links.
  CommReducer(const std::optional<schedules::Layout>& layout, int64_t world);
  /// `name`: an index the caller keeps (CommSummary::names).
  void add(int64_t rank, int32_t step, schedules::Stream stream, uint32_t op_index, int64_t occurrence, double start_s,
           double end_s, bool failed, uint32_t name);
  /// Closes the open TP group and sorts what is closed (a reading thread's last step,
  /// so the sort runs in parallel and merge only merges).
  void seal();
  /// Takes over `other`'s ranks (a later, disjoint rank range).
  void merge(CommReducer&& other);
  CommSummary finish(std::vector<std::string> names, int64_t steps);

private:
  struct Key {
    int64_t leader, occurrence;
    int32_t step;
    uint8_t stream;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = static_cast<uint64_t>(k.leader) * 0x9e3779b97f4a7c15ull;
      h ^= static_cast<uint64_t>(k.occurrence) + 0x7f4a7c159e3779b9ull + (h << 6) + (h >> 2);
      h ^= (static_cast<uint64_t>(k.step) << 8 | k.stream) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      return static_cast<size_t>(h);
    }
  };
  struct Open {
    double last_start = 0, end = 0;
    uint32_t name = 0;
    bool seen = false;
  };
  void close_tp();
  static void merge_into(std::unordered_map<Key, Open, KeyHash>& into, const Key& k, const Open& v);

  std::optional<schedules::Layout> layout_;
  int64_t world_ = 0;
  bool grouped_ = false;
  std::string note_;
  bool present_ = false;
  int64_t last_rank_ = -1, open_tp_leader_ = -1;
  std::vector<std::vector<StepComms>> steps_; // [rank][step], grown as needed
  /// The open TP group's instances, dense: [step][occurrence] (occurrences count from 0
  /// in each step, so a table beats a hash map on the 10^8 TP ops of 12,288 ranks).
  std::vector<std::vector<Open>> tp_open_;
  std::unordered_map<Key, Open, KeyHash> dp_open_;
  std::vector<CollectiveTime> closed_; // TP instances (DP ones stay in dp_open_ until finish)
  bool sealed_ = true;                 // closed_ is in instance_order
};

} // namespace twinscale::diagnose
