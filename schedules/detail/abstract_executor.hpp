// Private: the state of the abstract execution (abstract_execution.cpp runs it,
// execution_report.cpp describes the ranks it leaves stuck).
#pragma once

#include <array>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "schedules/detail/abstract_execution.hpp"

namespace twinscale::schedules::detail {

enum class OpPhase : uint8_t { NotStarted, Started, Done };

class AbstractExecutor {
public:
  /// Reports at most `max_mismatches` CollectiveMismatch violations.
  AbstractExecutor(const ExecutionRules& rules, const ExecutionModel& model, size_t max_mismatches);

  /// Executes until nothing changes (the unique maximal execution under the model).
  void run();
  /// Drops the communicator queues and executes on under the stream semantics alone.
  void lift_queues();
  bool all_done() const;
  /// Collectives whose members disagree on a communicator (found while executing).
  std::vector<Violation>& mismatches() { return mismatches_; }

  /// The stuck ranks under the stream semantics (execution_report.cpp).
  std::vector<Violation> deadlock_report(size_t max_violations) const;
  /// The stuck ranks under the communicator queues (execution_report.cpp).
  std::vector<Violation> queue_report(size_t max_violations) const;

private:
  struct Comm {                                      // one communicator, or one collective channel of a group
    std::string name;                                // "tp{0,1}", "pp:0>1", …
    std::vector<int64_t> member_ranks;               // global ranks
    std::vector<size_t> members;                     // executed ranks standing for them
    std::vector<uint32_t> arrived;                   // per instance: members that started it
    std::vector<std::pair<int64_t, uint32_t>> first; // queues: per instance, (rank, op) of the first
    bool mismatch_reported = false;
  };
  struct RankRun {
    int64_t rank = 0; // global rank
    const Program* program = nullptr;
    const ProgramIndex* index = nullptr;
    // Ops of a stream complete in order, so a rank's state is its stream cursors (ops
    // before the cursor are done) and whether each stream's head has started.
    std::array<size_t, kStreamCount> cursor{};
    std::array<bool, kStreamCount> head_started{};
    std::vector<uint32_t> started; // per channel of its program: ops started on it
    std::vector<int32_t> comm;     // per channel: its Comm (-1: none, or trivial by symmetry)
    // per channel, point-to-point only: the executed partner and its mirror channel
    std::vector<std::pair<size_t, uint16_t>> mirror;
    // with communicator queues only
    std::vector<uint32_t> number;              // op → its number in issue order (rules 2, 3)
    std::vector<uint32_t> queue_number;        // op → its number among its Comm's ops of its direction
    std::vector<uint32_t> issue_pos;           // op → position in the issue order
    std::vector<int32_t> queue_of;             // channel → index of its communicator's queue here
    std::vector<std::vector<uint32_t>> queue;  // per queue: its ops in issue order
    std::vector<size_t> queue_cursor;          // per queue: first op not done
    std::map<int32_t, int32_t> queue_of_comm;  // Comm → its queue here
    std::vector<std::vector<uint32_t>> issued; // per channel: its ops in issue order
    size_t done = 0;
  };

  void add_rank(int64_t rank);
  void find_mirrors(RankRun& st);
  int32_t comm_of(int64_t rank, const Channel& channel);
  void build_queues(RankRun& st);
  size_t index_of(int64_t rank) const;
  const RankRun& state_of(int64_t rank) const { return ranks_[index_of(rank)]; }
  uint32_t number(const RankRun& st, uint32_t op) const;
  static bool is_done(const RankRun& st, uint32_t op) {
    return st.index->position(op) < st.cursor[static_cast<size_t>(st.program->ops[op].stream)];
  }
  OpPhase phase(const RankRun& st, uint32_t op) const;
  bool can_start(const RankRun& st, uint32_t op, uint16_t channel) const;
  bool complete(const RankRun& st, uint32_t op, uint16_t channel) const;
  void arrive(RankRun& st, uint32_t op, uint16_t channel);
  void check_match(Comm& comm, uint32_t k, const RankRun& st, uint32_t op);
  bool sweep(RankRun& st);
  void enqueue(size_t i);

  // reports (execution_report.cpp)
  std::string name(const RankRun& st, uint32_t op) const;
  Violation violation(ViolationKind kind, const RankRun& st, uint32_t op, std::string reason) const;
  std::vector<int64_t> stage_members(int64_t rank, GroupKind group) const;
  std::string waits_for(const RankRun& st, uint32_t op) const;
  uint32_t queue_head(const RankRun& st, uint32_t op) const;
  std::string start_blocker(const RankRun& st, uint32_t op) const;
  std::string peer_wait(const RankRun& st, uint32_t op) const;
  Violation stuck_in_queue(const RankRun& st) const;

  const Schedule& s_;
  const Layout& L_;
  const ExecutionModel& model_;
  bool report_sym_; // report one representative per pipeline stage
  bool exec_sym_;   // execute one representative per pipeline stage
  bool queues_;     // the communicator queues hold
  bool numbered_;   // communication ops numbered in issue order (RankRun::number)
  std::vector<RankRun> ranks_;
  std::vector<Comm> comms_;
  std::map<std::pair<std::string, int64_t>, int32_t> comm_ids_; // (label, first member) → Comm
  std::deque<size_t> work_;
  std::vector<bool> queued_;
  std::vector<Violation> mismatches_;
  size_t max_mismatches_;
};

} // namespace twinscale::schedules::detail
