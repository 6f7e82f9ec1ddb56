// Private: the one abstract execution of a schedule (zero-time ops), under a
// communication model. The validator's deadlock check and the NCCL-order check
// (nccl_order.hpp) both run it.
#pragma once

#include <vector>

#include "schedules/execution_rules.hpp"
#include "schedules/nccl_order.hpp"
#include "schedules/validate.hpp"

namespace twinscale::schedules::detail {

/// How the abstract execution runs a schedule.
struct ExecutionModel {
  /// Report (and, without communicator queues, execute) one representative rank per
  /// pipeline stage; the caller checked that every program depends only on the pp
  /// coordinate (see abstract_execution.cpp for why that is exact).
  bool by_symmetry = false;
  /// false: the stream semantics alone (execution rules 1 to 3), stuck ranks reported as
  /// Deadlock. true: NCCL's rules on top: every communication op also waits until each op
  /// issued before it on its communicator (`comms`, in `issue_order`) is done; stuck ranks
  /// reported as NcclOrder, members disagreeing on a communicator's collective as
  /// CollectiveMismatch. Every rank is executed.
  bool comm_queues = false;
  CommModel comms = kDeviceCommModel;
  IssueOrder issue_order; // empty: program order
  /// With `comm_queues` (the devices' model, program order only): when ranks are stuck,
  /// lift the queues and execute on; ranks still stuck then are reported as Deadlock
  /// (the stream semantics alone cannot run the schedule), otherwise the NcclOrder
  /// report stands. So one execution tells both apart.
  bool stream_fallback = false;
};

/// Executes every rank's program (see ExecutionModel) and returns at most
/// `max_violations` violations: each rank left with unfinished ops, naming the op it is
/// stuck on and what it waits for. Assumes that the schedule's collectives and messages
/// match (ExecutionRules::check_collectives, check_messages) unless the model numbers
/// them in another issue order.
std::vector<Violation> execute(const ExecutionRules& rules, const ExecutionModel& model, size_t max_violations);

} // namespace twinscale::schedules::detail
