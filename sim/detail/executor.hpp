// The executor: runs every executed rank's program under the execution rules
// (schedules/execution_rules.hpp, docs/execution.md: program index, collective instance
// numbering, send/recv matching, start order) on a TimeEngine. Ops of one stream start
// in program order, each once the previous op of that stream has completed and its
// dependencies are done; streams interact only through dependencies; when several
// streams of a rank can start an op at the same instant, the higher Op::priority starts
// first. A collective starts moving data once every executed member of its group has
// reached it (members issue a group's collectives in the same order: the n-th
// collective of a group on every member is one instance); a Send and its Recv (the k-th
// of their pair) form one transfer once both are posted.
//
// Which ranks are executed (SimOptions, simulate.hpp):
//  - symmetric (aggregate on, every_rank off, equal speeds, every rank of a stage runs
//    the stage's program): one rank per pipeline stage stands for its stage;
//  - otherwise every rank, each computing at its GPU's speed factor.
// Shortcuts (aggregate on, also with every_rank): closed forms for collectives inside a
// server and merged ring steps; with aggregate off every step of every ring is a flow.
//
// State is compact so that 12,288 ranks × 25 k ops fit (see docs/simulator.md, "Cost"):
// per executed rank only its streams' positions, the start of each stream's running op
// and a running breakdown (rank_account.hpp); dependencies are checked against stream
// positions (op d is done when its stream has moved past it), so nothing is stored per
// op and rank; programs and their indexes are shared by the ranks that run them; op
// timings are kept only for traced ranks.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/progress.hpp"
#include "schedules/binary_trace.hpp"
#include "schedules/execution_rules.hpp"
#include "schedules/schedule.hpp"
#include "sim/detail/closed_form_prefetch.hpp"
#include "sim/detail/collective_task.hpp"
#include "sim/detail/network_paths.hpp"
#include "sim/detail/rank_account.hpp"
#include "sim/detail/time_engine.hpp"
#include "sim/device_model.hpp"
#include "sim/simulate.hpp"

namespace twinscale::sim::detail {

struct OpTiming {
  double start_s = -1;    // issued on its stream (reached the head, dependencies done)
  double transfer_s = -1; // communication: data starts moving
  double end_s = -1;
  bool failed = false;
};

/// What the hot path reads of an op, packed in 32 bytes (32-byte aligned: never across
/// two cache lines): when ranks drift apart (per-GPU speeds) each touches a different
/// part of its program, and the full Op is several cache lines (at 12,288 ranks, reading
/// it for each communication op was a fifth of the run). A copy of what the execution
/// rules (schedules/execution_rules.hpp) say about the op, next to its device time.
struct alignas(32) HotOp {
  enum Class : uint8_t { ComputeForward, ComputeBackward, ComputeOther, Send, Recv, Collective };
  double value = 0; // compute: device-model seconds at speed 1; communication: bytes
  uint32_t dep_begin = 0;
  uint32_t pos_in_stream = 0; // ProgramIndex::position
  uint32_t sequence = 0;      // ProgramIndex::sequence: instance or message number on its channel
  int32_t channel_key = 0;    // collectives: Channel::priority_class (the group is `group`)
  uint16_t priority = 0;      // rank of Op::priority among the program's (same order)
  uint16_t dep_count = 0;
  uint8_t stream = 0;
  Class cls = ComputeOther;
  schedules::GroupKind group = schedules::GroupKind::World;
  schedules::OpKind kind = schedules::OpKind::Gemm;
};
static_assert(sizeof(HotOp) == 32);

inline constexpr int kGroupKinds = schedules::kGroupKindCount;

class SimExecutor final : public CompletionListener {
public:
  /// `representative`: the pipeline executed by a symmetric run. Op timings are kept for
  /// the slots of SimOptions::trace_ranks (every slot when empty) if record_trace.
  /// `models`: the device model of each GPU model of the cluster (topology::
  /// gpu_model_of_server's index; empty: `device` for every GPU). Mixed models turn the
  /// symmetry off: each rank computes on its own GPU's model.
  SimExecutor(const schedules::Schedule& schedule, const std::vector<int64_t>& gpu_of_rank, const SimOptions& options,
              const DeviceModel& device, const NetworkPaths& paths, schedules::RankCoord representative = {},
              std::vector<const DeviceModel*> models = {});

  void attach(TimeEngine* backend) { backend_ = backend; }
  /// Closed forms computed ahead on another thread (closed_form_prefetch.hpp), with the
  /// images this executor's closed forms take (SimOptions::aggregate); it must outlive
  /// the run. Null: each is computed when first asked for.
  void use_prefetch(ClosedFormPrefetch* prefetch) { prefetch_ = prefetch; }
  /// The ranks a symmetric run executes: the pipeline through `representative`, with
  /// context parallelism its whole cp ring (the ring peers), by stage.
  static std::vector<int64_t> symmetric_ranks(const schedules::Layout& layout, schedules::RankCoord representative);
  /// Streams every completed op of every slot into `sink` (SimOptions::binary_trace).
  /// In a run by classes of identical replicas every rank not executed has its
  /// counterpart's events (BinaryTraceWriter::same_events_as).
  void set_trace_sink(schedules::BinaryTraceWriter* sink);
  /// After a run that did not complete: records the ops still running at `end_s` as
  /// failed, ending at `end_s` (what the Chrome trace shows for them).
  void record_running_ops(schedules::BinaryTraceWriter& sink, double end_s) const;
  void start();
  void on_compute_done(int32_t slot, uint32_t op) override;
  void on_comm_done(uint32_t comm_id, bool failed, double stalled_s) override;
  void on_job_fault(const std::string& why) override;
  void prefetch(int32_t slot) const override;
  double failure_time_s() const { return failure_time_s_; }

  /// After the run: throws ScheduleError naming the stuck rank and op unless every op
  /// completed (or the job failed).
  void check_finished() const;
  /// After a run with SimOptions::hang_rank: every rank's issued-but-unfinished ops
  /// and per-channel issue counts at `end_s` (hang_state.cpp).
  std::vector<records::RankState> hang_states(double end_s) const;
  /// After the run: closes every rank's breakdown at `horizon_s` (the makespan).
  void finish(double horizon_s);

  bool aggregated() const { return symmetric_; }
  /// Classes of identical replicas an every-rank run executed one replica of
  /// (replica_classes.cpp); 0 when it executed every rank (or the run is symmetric).
  int64_t replica_classes() const { return replica_classes_; }
  bool job_failed() const { return job_failed_; }
  const std::string& failure() const { return failure_; }
  const std::vector<int64_t>& slot_ranks() const { return slot_rank_; }
  int32_t slot_of_rank(int64_t rank) const { return slot_of_rank_[static_cast<size_t>(rank)]; }
  int32_t representative_slot(int64_t rank) const;
  /// The executed rank standing for coordinate `c` in a symmetric run (same pipeline
  /// stage and cp rank).
  int64_t representative_of(schedules::RankCoord c) const;
  /// Latest op end over every executed rank.
  double last_end_s() const { return last_end_s_; }
  const RankAccount& account(int32_t slot) const { return slots_[static_cast<size_t>(slot)].account; }
  /// Op timings of a traced slot (empty otherwise).
  const std::vector<OpTiming>& timings(int32_t slot) const { return slots_[static_cast<size_t>(slot)].timing; }
  const std::vector<OpIncident>& incidents() const { return incidents_; }
  int64_t ops_executed() const { return ops_done_; }
  bool all_ops_done() const { return ops_done_ == ops_total_; }
  const std::vector<int64_t>& gpu_of_slot() const { return slot_gpu_; }

private:
  // Hot fields first (what every op event reads), exactly four cache lines (the
  // prefetch hint loads them), the rest after: at 12,288 ranks the slots are megabytes
  // and each event touches one rank's slot.
  struct alignas(64) Slot {
    std::array<uint32_t, schedules::kStreamCount> stream_pos{};
    // per stream, while its head op waits for a dependency: that dependency's stream and
    // position (the head stays blocked while stream_pos[wait_stream] ≤ wait_pos), so an
    // event re-checks only the streams it may have unblocked
    std::array<uint32_t, schedules::kStreamCount> wait_pos{};
    std::array<uint8_t, schedules::kStreamCount> wait_stream{}; // kNoWait: not known blocked
    uint8_t busy = 0;                                           // bit per stream
    uint8_t streams = 0;                                        // bit per stream its program has ops on
    int32_t comm_ctas = 0;                                      // CTAs of its communication kernels now running
    double speed = 1;                                           // compute speed factor of its GPU
    const schedules::ProgramIndex* index = nullptr;             // the rules' index of its program
    const HotOp* hot = nullptr;                                 // its program's hot records, by op
    const uint32_t* dep_at = nullptr; // its program's dependencies as position << 3 | stream (CSR of deps)
    RankAccount account;
    std::array<double, schedules::kStreamCount> stream_start{}; // running op's issue time
    // cold: communication ops' and the run's set-up
    const schedules::Program* program = nullptr;
    std::vector<OpTiming> timing;       // traced slots only
    double issue_gap = 0;               // its GPU model's op_issue_gap_s (read only when has_issue_gap_)
    const double* host_issue = nullptr; // its program's host issue times (null: no host model)
    const int16_t* tp_sms = nullptr;    // its program's TE userbuffers SMs by op (null: none set)
    int64_t rank = 0;
    std::array<int64_t, kGroupKinds> group_first{};      // first member of its group per kind
    std::array<int32_t, kGroupKinds> group_needed{};     // executed members of that group
    std::array<uint32_t, kGroupKinds> group_id{};        // that group's index in groups_[kind]
    std::vector<std::pair<int32_t, uint32_t>> out_pairs; // (dst slot, pair queue) it sends to
  };
  static_assert(schedules::kStreamCount <= 8, "Slot::busy and Slot::streams hold a bit per stream");
  static constexpr uint8_t kNoWait = 0xff;
  struct Participant {
    int32_t slot;
    uint32_t op;
  };
  struct Posted { // a send or receive waiting for its match: its group and message number
    Participant p;
    uint64_t key;
  };
  struct PendingCollective {
    std::vector<Participant> arrived;
  };
  /// Sends and receives posted between one (src, dst) pair and not matched yet; the
  /// k-th send meets the k-th receive of the same group (execution rule 3: matched by
  /// message number, not by arrival). Short vectors, nothing allocated once warm.
  struct PairQueue {
    std::vector<Posted> sends, recvs;
    double bytes = -1, closed_form_s = 0; // last closed form computed for the pair
  };
  /// A communication group of one kind: its instances waiting for members (by seq;
  /// they complete in seq order, so the list is short) and what its closed forms cost.
  struct GroupState {
    std::vector<std::pair<uint64_t, uint32_t>> pending; // (channel key, instance; index in pending_)
    int8_t same_server = -1;                            // −1: not computed yet
    int16_t nccl_ctas = -1;                             // DP collectives' CTAs; −1: not computed yet
    struct Form {
      int kind = -1;
      double bytes = 0, seconds = 0;
    };
    std::array<Form, 4> forms{}; // recent closed forms (round robin)
    uint8_t next_form = 0;
  };

  /// The first dependency of `op` not done yet, as (stream, position); {kNoWait, 0} if none.
  std::pair<uint8_t, uint32_t> first_pending_dep(const Slot& sl, uint32_t op) const;
  void issue_ready(int32_t slot);
  void issue(int32_t slot, uint32_t op);
  void complete_op(int32_t slot, uint32_t op, bool failed);
  void issue_collective(int32_t slot, uint32_t op);
  void issue_p2p(int32_t slot, uint32_t op);
  /// `ctas`: the CTAs its kernels occupy on each participant's GPU while it runs.
  void start_comm(std::span<const Participant> participants, CommTask task, int32_t ctas);
  /// The CTAs a collective's NCCL kernels occupy on each member's GPU (collective_ctas.cpp).
  int32_t collective_ctas(const Slot& sl, uint32_t op_index, GroupState& group) const;
  CommTask collective_task(const HotOp& op, int64_t rank, GroupState& group) const;
  int64_t peer_rank(int32_t slot, uint32_t op_index) const;
  PairQueue& pair_queue(int32_t src_slot, int32_t dst_slot);
  CommTask p2p_task(int64_t src_rank, int64_t dst_rank, double bytes) const;
  std::string op_name(int32_t slot, uint32_t op) const;
  void fail_job(const std::string& why);
  void decide_symmetry();
  /// The ranks an every-rank run executes: every rank, or one replica of each class of
  /// identical replicas (then fills stand_in_rank_ and replica_classes_).
  std::vector<int64_t> every_rank_slots();
  void plan_jitter();
  /// Extra seconds of a jitter pause on compute op `op` of `slot` (0 for most ops).
  double jitter_s(int32_t slot, uint32_t op) const;

  const schedules::Schedule& schedule_;
  const std::vector<int64_t>& gpu_of_rank_;
  const SimOptions& options_;
  const DeviceModel& device_;
  const NetworkPaths& paths_;
  CollectiveTasks collectives_;
  TimeEngine* backend_ = nullptr;
  schedules::BinaryTraceWriter* trace_sink_ = nullptr; // SimOptions::binary_trace
  bool symmetric_ = false;                             // one pipeline stands for all
  bool shortcuts_ = false;                             // closed forms inside a server, merged ring steps

  schedules::ExecutionRules rules_;           // rules 1-3, one index per program
  std::vector<std::vector<HotOp>> hot_;       // by program × GPU model, then op
  std::vector<std::vector<uint32_t>> dep_at_; // by program: Slot::dep_at
  std::vector<const DeviceModel*> models_;    // by GPU model
  std::vector<uint8_t> model_of_gpu_;         // empty: one model
  std::vector<Slot> slots_;
  std::vector<int64_t> slot_rank_;
  std::vector<int64_t> slot_gpu_;
  std::vector<int32_t> slot_of_rank_;
  std::vector<int64_t> stand_in_rank_; // compacted every-rank runs: the executed rank standing for each rank
  int64_t replica_classes_ = 0;
  std::array<std::vector<GroupState>, kGroupKinds> groups_; // by kind, then Slot::group_id
  std::vector<PendingCollective> pending_;
  std::vector<uint32_t> free_pending_;
  std::vector<PairQueue> pair_queues_;          // found through Slot::out_pairs of the sender
  std::vector<std::vector<Participant>> comms_; // by comm id (ids are reused)
  std::vector<int32_t> comm_ctas_;              // by comm id: the CTAs on each participant
  std::vector<uint32_t> free_comms_;
  mutable std::unordered_map<ClosedFormKey, double, ClosedFormHash> closed_form_cache_;
  ClosedFormPrefetch* prefetch_ = nullptr;
  std::vector<OpIncident> incidents_;
  int64_t ops_done_ = 0;
  int64_t ops_total_ = 0;
  double last_end_s_ = 0;
  bool job_failed_ = false;
  double failure_time_s_ = -1;
  schedules::RankCoord rep_{};
  std::string failure_;
  int32_t hang_slot_ = -1; // SimOptions::hang_rank's slot
  /// Jitter pauses of a fault plan: (slot << 32 | op) → seconds added to that compute op.
  std::unordered_map<uint64_t, double> jitter_s_;
  bool has_issue_gap_ = false; // some GPU model has an op_issue_gap_s (the probed CPU host's hand-off)
  // The host's issue time of each op, by program (empty when the job has no host time per call):
  // the module calls up to and including it times the job's host time per call.
  std::vector<std::vector<double>> host_issue_s_;
  std::vector<std::vector<int16_t>> tp_sms_; // by program, then op: OverlapSpec::tp_sms_* (−1: none)
  std::unique_ptr<Progress> progress_;       // SimOptions::show_progress: ops done of all ops
};

} // namespace twinscale::sim::detail
