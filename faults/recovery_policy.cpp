#include "faults/recovery_policy.hpp"

#include <cmath>

#include "faults/error.hpp"

namespace twinscale::faults {

double DetectionPolicy::latency_s(DetectionSignal signal) const {
  switch (signal) {
  case DetectionSignal::ExplicitError: return explicit_error_s;
  case DetectionSignal::MissedHeartbeat: return heartbeat_period_s * static_cast<double>(heartbeat_misses);
  case DetectionSignal::TrafficDrop: return traffic_window_s;
  case DetectionSignal::None: return silent_s;
  }
  return silent_s;
}

double comm_init_store_ops(CommInitMethod method, const topology::JobShape& s) {
  const double n = static_cast<double>(s.tp * s.dp * s.pp);
  // World: every rank registers, then one barrier over all ranks.
  const double world_ops = 2 * n;
  // Each rank is a member of one TP, one PP and one DP group: 3N registrations in all.
  const double member_ops = 3 * n;
  switch (method) {
  case CommInitMethod::GlobalBarrierPerGroup: {
    // Every group's creation is followed by a barrier over all N ranks.
    const double groups = n / static_cast<double>(s.tp) + n / static_cast<double>(s.pp) + n / static_cast<double>(s.dp);
    return world_ops + member_ops + groups * n;
  }
  case CommInitMethod::LocalBarrier:
    // A barrier only among each group's members: one more operation per membership.
    return world_ops + 2 * member_ops;
  }
  return 0;
}

double comm_init_s(const CommInitPolicy& p, const topology::JobShape& shape) {
  return comm_init_store_ops(p.method, shape) * p.store_op_s;
}

double calibrate_store_op_s(CommInitMethod method, const topology::JobShape& shape, double measured_s) {
  return measured_s / comm_init_store_ops(method, shape);
}

namespace {
[[noreturn]] void fail(const RecoveryPolicy& p, const std::string& field, const std::string& why) {
  throw FaultError("recovery policy '" + p.name + "': " + field + " " + why);
}
void non_negative(const RecoveryPolicy& p, const char* field, double v) {
  if (!(v >= 0) || !std::isfinite(v)) fail(p, field, "must be a finite number of seconds ≥ 0");
}
void probability(const RecoveryPolicy& p, const char* field, double v) {
  if (!(v >= 0 && v <= 1)) fail(p, field, "must be a probability in [0, 1]");
}
} // namespace

void validate_policy(const RecoveryPolicy& p) {
  if (!(p.retransmit.timeout_per_retry_s > 0)) fail(p, "retransmit.timeout_per_retry_s", "must be > 0");
  if (p.retransmit.retries < 1) fail(p, "retransmit.retries", "must be ≥ 1");
  non_negative(p, "detection.explicit_error_s", p.detection.explicit_error_s);
  if (!(p.detection.heartbeat_period_s > 0)) fail(p, "detection.heartbeat_period_s", "must be > 0");
  if (p.detection.heartbeat_misses < 1) fail(p, "detection.heartbeat_misses", "must be ≥ 1");
  non_negative(p, "detection.traffic_window_s", p.detection.traffic_window_s);
  non_negative(p, "detection.silent_s", p.detection.silent_s);
  non_negative(p, "diagnostics.duration_s", p.diagnostics.duration_s);
  probability(p, "diagnostics.false_negative_rate", p.diagnostics.false_negative_rate);
  probability(p, "diagnostics.false_positive_rate", p.diagnostics.false_positive_rate);
  if (p.diagnostics.escalate_after < 1) fail(p, "diagnostics.escalate_after", "must be ≥ 1");
  non_negative(p, "diagnostics.escalation_s", p.diagnostics.escalation_s);
  non_negative(p, "diagnostics.missed_fault_recurrence_s", p.diagnostics.missed_fault_recurrence_s);
  if (p.replacement.warm_spares < 0) fail(p, "replacement.warm_spares", "must be ≥ 0");
  non_negative(p, "replacement.spare_swap_s", p.replacement.spare_swap_s);
  non_negative(p, "replacement.cold_replacement_s", p.replacement.cold_replacement_s);
  non_negative(p, "replacement.repair_s", p.replacement.repair_s);
  non_negative(p, "restart_s", p.restart_s);
  if (!(p.comm_init.store_op_s >= 0)) fail(p, "comm_init.store_op_s", "must be ≥ 0");
}

const char* to_string(CommInitMethod m) { return enum_name(kCommInitMethodNames, m).data(); }

const char* to_string(CheckpointLoadMethod m) { return enum_name(kCheckpointLoadMethodNames, m).data(); }

} // namespace twinscale::faults
