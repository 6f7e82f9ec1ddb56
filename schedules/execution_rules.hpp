// The execution rules every executor follows (the simulator, sim/detail/executor.hpp;
// the real backend, backend/executor.hpp; the validator's abstract execution,
// schedules/detail/abstract_execution.cpp; the trace checker, trace_check.hpp), stated
// once here and in docs/execution.md:
//
// 1. Program index. An op is identified by its index in its rank's program. Ops of one
//    stream start in program order, each once its stream predecessor has completed;
//    dependencies point to earlier ops of the same program (checked when indexed).
// 2. Collective numbering. A rank's communication ops are grouped into channels: one per
//    (group kind, priority class) for collectives (priority classes only split the dp
//    group, whose classes the devices run on separate communicators: nccl_order.hpp),
//    one per (direction, group kind, peer) for point-to-point. The k-th collective of a
//    rank on a channel (program order) is instance k of that channel on the rank's group;
//    every member's instance k is the same collective (kind and bytes agree: checked by
//    check_collectives) and it completes once every member has reached it.
// 3. Send/recv matching. The k-th send from a to b on a group (program order) matches
//    the k-th receive at b from a on that group; equal bytes (check_messages).
// 4. Start order. When several ops of a rank are ready at once, the higher Op::priority
//    starts first; ties start in program order (starts_before, order_ready).
//
// Everything is precomputed once per distinct program (ranks with identical programs
// share one ProgramIndex), so the executors' hot loops only read arrays: no allocation
// per event.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "schedules/schedule.hpp"

namespace twinscale::schedules {

// ---- rule 4: the start order -------------------------------------------------------

/// True when ready op `a` starts before ready op `b` of the same program: higher
/// priority first, then the lower program index.
inline bool starts_before(int32_t priority_a, uint32_t index_a, int32_t priority_b, uint32_t index_b) {
  return priority_a != priority_b ? priority_a > priority_b : index_a < index_b;
}

inline bool starts_before(const Program& p, uint32_t a, uint32_t b) {
  return starts_before(p.ops[a].priority, a, p.ops[b].priority, b);
}

/// Sorts `ready` (op indices of `p`, a handful: one per stream) into start order, in place.
void order_ready(const Program& p, std::span<uint32_t> ready);

// ---- rules 2 and 3: channels --------------------------------------------------------

enum class ChannelDir : uint8_t { Collective, Send, Recv };

/// One ordered channel of a rank's communication ops, in compact form (the same
/// partition as communicator_of() with the devices' model, without the string).
struct Channel {
  GroupKind group = GroupKind::World;
  ChannelDir dir = ChannelDir::Collective;
  int32_t peer = -1;          // Send/Recv: the peer's index inside `group`; -1 for collectives
  int32_t priority_class = 0; // dp collectives: Op::priority; 0 otherwise
  auto operator<=>(const Channel&) const = default;
};

/// The channel of communication op `op`.
Channel channel_of(const Op& op);

/// "tp group", "dp group (priority class 1)", "sends to pp peer 2", … (for messages).
std::string describe(const Channel& channel);

inline constexpr uint16_t kNoChannel = 0xffff;

/// Global rank of member `index` of `rank`'s group of `kind` (no allocation). Throws
/// ScheduleError when `index` is outside the group.
int64_t group_member(const Layout& layout, GroupKind kind, int64_t rank, int64_t index);
/// The same with `rank`'s coordinates already taken (`c` == layout.coord(rank)): loops
/// over every rank (the set-up's checks) take them once per rank.
int64_t group_member(const Layout& layout, GroupKind kind, int64_t rank, const RankCoord& c, int64_t index);

// ---- rule 1 (and the numbering of 2 and 3) for one program ----------------------------

class ProgramIndex {
public:
  ProgramIndex() = default;
  /// Indexes `program` (which must outlive the index). Throws ScheduleError naming
  /// `program_id` and the op when an op's stream is out of range, a dependency is not
  /// an earlier op, or the program has more than 65,534 channels.
  ProgramIndex(const Program& program, size_t program_id);

  const Program& program() const { return *program_; }
  size_t size() const { return position_.size(); }

  /// Rule 1: the ops of stream `s` in program order; an op's position among them; the
  /// op before it on its stream (-1 for the first).
  std::span<const uint32_t> stream_ops(size_t s) const { return stream_ops_[s]; }
  std::span<const uint32_t> stream_ops(Stream s) const { return stream_ops_[static_cast<size_t>(s)]; }
  uint32_t position(uint32_t op) const { return position_[op]; }
  int64_t stream_prev(uint32_t op) const;
  /// The dependencies of `op` (the program's CSR, validated: every one is earlier).
  std::span<const uint32_t> deps(uint32_t op) const { return program_->deps_of(op); }

  /// Rules 2 and 3: the channel of a communication op (kNoChannel for compute) and its
  /// number on it: a collective's instance number, a send's or receive's message number.
  uint16_t channel(uint32_t op) const { return channel_[op]; }
  uint32_t sequence(uint32_t op) const { return sequence_[op]; }
  const std::vector<Channel>& channels() const { return channels_; }
  /// The ops of channel `c`, in program order (op at position k has sequence k).
  std::span<const uint32_t> channel_ops(uint16_t c) const {
    return {channel_ops_.data() + channel_begin_[c], channel_begin_[c + 1u] - channel_begin_[c]};
  }
  /// The index of `c` among channels(), or kNoChannel when the program never uses it.
  uint16_t find_channel(const Channel& c) const;

private:
  const Program* program_ = nullptr;
  std::array<std::vector<uint32_t>, kStreamCount> stream_ops_;
  std::vector<uint32_t> position_;
  std::vector<uint16_t> channel_;
  std::vector<uint32_t> sequence_;
  std::vector<Channel> channels_; // sorted
  std::vector<uint32_t> channel_begin_, channel_ops_;
};

/// Rules 2 and 3 under another issue order (a device that issues a program's ops in a
/// permutation of program order, as NCCL then numbers them): the number of each
/// communication op among the earlier-issued ops whose channel falls in the same class
/// (`class_of_channel[c]` for channel c of `index`; classes partition the channels, so a
/// device may run several channels on one communicator). Compute ops get 0. With program
/// order and one class per channel this is ProgramIndex::sequence. Throws ScheduleError
/// when `order` is not a permutation of the program's op indices.
std::vector<uint32_t> number_in_issue_order(const ProgramIndex& index, std::span<const uint32_t> order,
                                            std::span<const uint32_t> class_of_channel);

/// Rule 2's rendezvous: an instance whose group has `members` (the members an executor
/// runs) starts, in the simulator, or counts as done, in an abstract execution, once
/// `reached` of them have reached it.
constexpr bool all_members_reached(size_t reached, size_t members) { return reached >= members; }

// ---- the rules over a whole schedule --------------------------------------------------

/// A collective whose instance disagrees between two members of its group (rule 2), or
/// a message whose send and receive disagree (rule 3).
struct RuleMismatch {
  int64_t rank = -1;       // the member (receiver) that disagrees
  int64_t op = -1;         // its op (-1: it has no op with that number)
  int64_t other_rank = -1; // the group's first member (the sender)
  int64_t other_op = -1;
  GroupKind group = GroupKind::World;
  uint32_t instance = 0; // instance (message) number on the channel
  std::string reason;    // names rank, group, instance, kinds and bytes
};

class ExecutionRules {
public:
  /// Indexes every program of `schedule` once (see ProgramIndex for what is refused);
  /// a helper thread, as `helper_thread` allows, indexes some of them at the same time
  /// (for_each_index_with_helper: the same indexes, the same first error).
  explicit ExecutionRules(const Schedule& schedule, HelperThread helper_thread = HelperThread::Off);

  const Schedule& schedule() const { return *schedule_; }
  const ProgramIndex& program(size_t program_id) const { return programs_[program_id]; }
  const ProgramIndex& of_rank(int64_t rank) const { return programs_[schedule_->program_of_rank[rank]]; }

  /// Rule 3: the op that send/recv `op` of `rank` matches: the peer's rank and its op
  /// with the same number on the mirror channel (-1 when the peer has none).
  struct Partner {
    int64_t rank = -1;
    int64_t op = -1;
  };
  Partner partner(int64_t rank, uint32_t op) const;

  /// Rule 2 checked: for every group and collective channel, instance k has the same
  /// kind and bytes on every member, and every member has as many instances. Compares
  /// each distinct pair of programs once per group kind.
  std::vector<RuleMismatch> check_collectives(size_t max_mismatches = 50) const;
  /// Rule 3 checked: for every rank pair, the k-th send and the k-th receive carry
  /// equal bytes, and every send has its receive.
  std::vector<RuleMismatch> check_messages(size_t max_mismatches = 50) const;

private:
  const Schedule* schedule_;
  std::vector<ProgramIndex> programs_;
};

} // namespace twinscale::schedules
