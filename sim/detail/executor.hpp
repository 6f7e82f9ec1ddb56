// The executor: runs every executed rank's program with the semantics of
// schedules/schedule.hpp on a Backend. Ops of one stream start in program order, each
// once the previous op of that stream has completed and its dependencies are done;
// streams interact only through dependencies; when several streams of a rank can start
// an op at the same instant, the higher Op::priority starts first. A collective starts
// moving data once every executed member of its group has reached it (members issue a
// group's collectives in the same order: the n-th collective of a group on every
// member is one instance); a Send and its Recv form one transfer once both are posted.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "schedules/schedule.hpp"
#include "sim/detail/backend.hpp"
#include "sim/detail/collective_task.hpp"
#include "sim/detail/network_paths.hpp"
#include "sim/device_model.hpp"
#include "sim/simulate.hpp"

namespace twinscale::sim::detail {

struct OpTiming {
  double start_s = -1;     // issued on its stream (reached the head, dependencies done)
  double transfer_s = -1;  // communication: data starts moving
  double end_s = -1;
  bool failed = false;
};

/// Per-program indexes shared by every rank running that program.
struct ProgramIndex {
  std::array<std::vector<uint32_t>, schedules::kStreamCount> stream_ops;
  std::vector<uint32_t> dependents_begin; // CSR: dependents of op i
  std::vector<uint32_t> dependents;
};

class Executor final : public CompletionListener {
public:
  Executor(const schedules::Schedule& schedule, const std::vector<int64_t>& gpu_of_rank,
           const SimOptions& options, const DeviceModel& device, const NetworkPaths& paths,
           bool aggregate, schedules::RankCoord representative = {});

  void attach(Backend* backend) { backend_ = backend; }
  void start();
  void on_compute_done(int32_t slot, uint32_t op) override;
  void on_comm_done(uint32_t comm_id, bool failed, double stalled_s) override;
  void on_job_fault(const std::string& why) override;
  double failure_time_s() const { return failure_time_s_; }

  /// After the run: throws ScheduleError naming the stuck rank and op unless every op
  /// completed (or the job failed).
  void check_finished() const;

  bool aggregated() const { return aggregated_; }
  bool job_failed() const { return job_failed_; }
  const std::string& failure() const { return failure_; }
  const std::vector<int64_t>& slot_ranks() const { return slot_rank_; }
  int32_t slot_of_rank(int64_t rank) const { return slot_of_rank_[static_cast<size_t>(rank)]; }
  int32_t representative_slot(int64_t rank) const;
  const std::vector<OpTiming>& timings(int32_t slot) const { return slots_[static_cast<size_t>(slot)].timing; }
  const std::vector<OpIncident>& incidents() const { return incidents_; }
  int64_t ops_executed() const { return ops_done_; }
  const std::vector<int64_t>& gpu_of_slot() const { return slot_gpu_; }

private:
  struct Slot {
    int64_t rank = 0;
    const schedules::Program* program = nullptr;
    const ProgramIndex* index = nullptr;
    std::array<uint32_t, schedules::kStreamCount> stream_pos{};
    std::array<bool, schedules::kStreamCount> stream_busy{};
    std::vector<uint32_t> deps_left;
    std::vector<OpTiming> timing;
    std::array<uint32_t, 5> group_seq{};  // collectives issued per GroupKind
    int32_t active_comms = 0;
  };
  struct Participant {
    int32_t slot;
    uint32_t op;
  };
  struct PendingCollective {
    std::vector<Participant> arrived;
    size_t needed = 0;
  };
  struct PairQueue {
    std::deque<Participant> sends, recvs;
  };
  struct CommInstance {
    std::vector<Participant> participants;
  };

  void try_issue(int32_t slot, int stream);
  void issue(int32_t slot, uint32_t op);
  void complete_op(int32_t slot, uint32_t op, bool failed);
  void issue_collective(int32_t slot, uint32_t op);
  void issue_p2p(int32_t slot, uint32_t op);
  void start_comm(std::vector<Participant> participants, CommTask task);
  CommTask collective_task(int32_t slot, const schedules::Op& op, const std::vector<int64_t>& members) const;
  CommTask p2p_task(int64_t src_rank, int64_t dst_rank, double bytes) const;
  std::vector<std::vector<int64_t>> image_groups(schedules::GroupKind kind,
                                                 const std::vector<int64_t>& members) const;
  std::string op_name(int32_t slot, uint32_t op) const;
  void fail_job(const std::string& why);

  const schedules::Schedule& schedule_;
  const std::vector<int64_t>& gpu_of_rank_;
  const SimOptions& options_;
  const DeviceModel& device_;
  const NetworkPaths& paths_;
  CollectiveTasks collectives_;
  Backend* backend_ = nullptr;
  bool aggregated_ = false;

  std::vector<ProgramIndex> program_index_;
  std::vector<Slot> slots_;
  std::vector<int64_t> slot_rank_;
  std::vector<int64_t> slot_gpu_;
  std::vector<int32_t> slot_of_rank_;
  std::map<std::tuple<int, int64_t, uint32_t>, PendingCollective> pending_collectives_;
  std::map<std::pair<int64_t, int64_t>, PairQueue> pending_p2p_;
  std::vector<CommInstance> comms_;
  mutable std::map<std::tuple<int, int, int64_t, double>, double> closed_form_cache_;
  std::vector<OpIncident> incidents_;
  int64_t ops_done_ = 0;
  int64_t ops_total_ = 0;
  bool job_failed_ = false;
  double failure_time_s_ = -1;
  schedules::RankCoord rep_{};
  std::string failure_;
};

} // namespace twinscale::sim::detail
