// NCCL's ordering rules as a checked property of a schedule and a host issue order.
//
// On a GPU the schedule's stream semantics (schedule.hpp) are not the whole story: NCCL
// runs the kernels of one communicator in the order the host issued them, on every
// member, whatever CUDA stream they were issued on (each kernel waits for the previous
// one of its communicator), and a send completes only together with its receive. So the
// mapping of ops to communicators and the order in which the host issues them can
// deadlock a schedule that is valid under the stream semantics alone: with one
// communicator for every send and receive of a pipeline group, stage 0 issuing S(f1)
// before R(b0) and stage 1 issuing R(f1) after S(b0) wait on each other forever.
//
// check_nccl_order() executes every rank under both sets of rules (stream order,
// dependencies, and per communicator: issue order, collectives matched by position,
// sends matched with receives) and reports the ranks left stuck, naming the op each is
// stuck on and the earlier op of the same communicator (or the peer) it waits for. It is
// the validator's abstract execution (detail/abstract_execution.cpp) with the queues of a
// CommModel; validate() runs the same execution once with the devices' model. The
// devices (backend/) use communicator_of() to pick their communicators, so the check
// speaks about what they really do.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "schedules/schedule.hpp"
#include "schedules/validate.hpp"

namespace twinscale::schedules {

/// How a device maps ops to NCCL communicators.
struct CommModel {
  /// true: one 2-rank communicator per pipeline peer pair and direction (a directed
  /// channel: the sender only sends on it, the receiver only receives), so sends and
  /// receives of a pair never queue behind each other. false: one communicator per
  /// pipeline group carries every send and receive (as the CUDA device once did).
  bool directed_p2p = true;
  /// true: the data-parallel collectives of each priority class (Op::priority) have
  /// their own communicator, so a high-priority one is not queued behind a low one.
  bool dp_by_priority = true;
};

/// The model the devices use (backend/ executor, CPU and CUDA devices).
inline constexpr CommModel kDeviceCommModel{};

/// The rank-local name of the communicator op `op` of `rank` runs on: "tp", "dp",
/// "dp@p1" (priority class 1), "pp", "embedding", "world" for collectives;
/// "send:pp:<peer global rank>" / "recv:pp:<peer global rank>" for p2p with directed
/// channels, "pp" with a shared one. Empty for compute ops. Two ranks' ops run on the
/// same communicator iff they are members of the same group and the names match
/// (p2p: "send:pp:B" on A is the communicator "recv:pp:A" on B).
std::string communicator_of(const Schedule& schedule, int64_t rank, const Op& op,
                            const CommModel& model = kDeviceCommModel);

/// The order in which the host of `rank` issues its ops (a permutation of the program's
/// op indices). Empty function: program order.
using IssueOrder = std::function<std::vector<uint32_t>(int64_t rank)>;

/// Executes the whole schedule under NCCL's rules and returns one NcclOrder violation
/// per rank that cannot finish (at most `max_violations`), or violations of the kind
/// CollectiveMismatch when members issue different collectives at the same position of
/// a communicator. Linear in ranks × ops; every rank is executed.
std::vector<Violation> check_nccl_order(const Schedule& schedule, const CommModel& model = kDeviceCommModel,
                                        const IssueOrder& issue_order = {}, size_t max_violations = 50);

} // namespace twinscale::schedules
