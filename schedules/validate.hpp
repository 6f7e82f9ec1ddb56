// The schedule validator: proves that a schedule can run under the execution semantics
// of schedule.hpp, or lists what prevents it (rank, op, labels, reason).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedules/schedule.hpp"

namespace twinscale::schedules {

enum class ViolationKind : uint8_t {
  Structure,          // malformed: bad program index, peer, group, name, …
  Dependency,         // a dependency on a later op or itself (the only way to form a cycle)
  CollectiveMismatch, // members of a group issue different collective sequences
  UnmatchedP2p,       // sends and receives of a rank pair differ in count or bytes
  Deadlock,           // the abstract execution gets stuck
  Memory,             // a stage's memory estimate exceeds the GPU
  NcclOrder,          // deadlocks under NCCL's per-communicator ordering (nccl_order.hpp)
};
std::string_view to_string(ViolationKind);

struct Violation {
  ViolationKind kind = ViolationKind::Structure;
  int64_t rank = -1;     // -1: not about one rank
  int64_t op_index = -1; // index in the rank's program; -1: not about one op
  std::string op_name;
  std::string labels; // "it 0 mb 3 chunk 1 layer 5 bwd"
  std::string reason;
};

struct ValidateOptions {
  double gpu_memory_bytes = 80e9;
  bool check_memory = true;
  /// Check one representative rank per pipeline stage when every program depends only
  /// on the pp coordinate (see detail/abstract_execution.cpp for why that is exact).
  /// Off, or when programs are not pp-symmetric: every rank is executed, which is
  /// linear in ranks × ops (≈ 3 s at 1,536 ranks, ≈ 25 s at 12,288 for GPT-175B).
  /// Deadlocks are reported per representative either way.
  bool use_symmetry = true;
  size_t max_violations = 50;
  /// Execute the schedule with NCCL's communicator queues of the devices' model on top
  /// of the stream semantics (schedules/nccl_order.hpp), in the same abstract execution,
  /// when ranks × ops ≤ `nccl_order_max_ops` (every rank is executed then; larger
  /// schedules are checked under the stream semantics alone).
  bool check_nccl_order = true;
  double nccl_order_max_ops = 1e6;
};

/// Runs every check; an empty list means the schedule is valid.
std::vector<Violation> validate(const Schedule& schedule, const ValidateOptions& options = {});

/// "rank 3 op 57 (pp.recv.gradient; it 0 mb 2 chunk 0 bwd): deadlock: …"
std::string describe(const Violation& violation);

/// True when program_of_rank depends only on the pp coordinate (tp × dp symmetry).
bool is_pp_symmetric(const Schedule& schedule);

/// Human-readable labels of an op.
std::string describe_labels(const OpLabels& labels);

} // namespace twinscale::schedules
