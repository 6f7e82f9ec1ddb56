#include "faults/fault_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "faults/error.hpp"
#include "faults/plan_targets.hpp"

namespace twinscale::faults {

const char* to_string(PlanEventKind kind) { return enum_name(kPlanEventKindNames, kind).data(); }

namespace {

std::string seconds_text(double s) {
  if (std::isinf(s)) return "∞";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

std::string describe(const PlanEvent& e, size_t index) {
  return "event[" + std::to_string(index) + "] (" + to_string(e.kind) + " of '" + e.target + "' during [" +
         seconds_text(e.at_s) + ", " + seconds_text(e.until_s) + "))";
}

[[noreturn]] void fail(const PlanEvent& e, size_t index, const std::string& why) {
  throw FaultError("fault plan: " + describe(e, index) + ": " + why);
}

void check_times(const PlanEvent& e, size_t i) {
  if (!std::isfinite(e.at_s) || e.at_s < 0) fail(e, i, "start time must be a finite number of seconds ≥ 0");
  if (std::isnan(e.until_s) || !(e.until_s > e.at_s))
    fail(e, i, "end must be later than the start (a positive duration)");
  switch (e.kind) {
  case PlanEventKind::LinkFlap:
    if (std::isinf(e.until_s)) fail(e, i, "a flap needs a finite duration; use link-down for an outage that lasts");
    break;
  case PlanEventKind::ServerCrash:
    if (!std::isinf(e.until_s)) fail(e, i, "a server crash is permanent (no end time)");
    break;
  default: break;
  }
  if (e.kind == PlanEventKind::Jitter && (e.at_s != 0 || !std::isinf(e.until_s)))
    fail(e, i,
         "a jitter event lasts the whole run: at_s = 0 and no until_s or duration_s (a time window is not supported)");
  if (e.kind == PlanEventKind::LinkDegraded) {
    if (!(e.bandwidth_factor > 0 && e.bandwidth_factor < 1))
      fail(e, i, "bandwidth_factor must be the fraction of bandwidth left, in (0, 1), e.g. 0.5 for half");
  } else if (e.bandwidth_factor != 1) {
    fail(e, i, "only link-degraded events take a bandwidth_factor");
  }
  if (e.kind == PlanEventKind::Jitter) {
    if (!(e.probability > 0 && e.probability <= 1))
      fail(e, i, "probability must be the chance of a pause per iteration, in (0, 1]");
    if (!(e.delay_s > 0) || !std::isfinite(e.delay_s))
      fail(e, i, "delay_s must be the length of one pause, a finite number of seconds > 0");
  } else if (e.probability != 0 || e.delay_s != 0) {
    fail(e, i, "only jitter events take a probability and a delay_s");
  }
  if (e.kind == PlanEventKind::GpuSlowdown) {
    if (!(e.slowdown > 0 && e.slowdown < 1))
      fail(e, i, "slowdown must be a fraction of speed lost in (0, 1), e.g. 0.1 for 10 % slower");
  } else if (e.slowdown != 0) {
    fail(e, i, "only gpu-slowdown events take a slowdown");
  }
}

void resolve(PlanEvent& e, size_t i, const PlanTargets& targets) {
  std::optional<int64_t> idx;
  std::string what, examples;
  switch (e.kind) {
  case PlanEventKind::LinkFlap:
  case PlanEventKind::LinkDown:
  case PlanEventKind::LinkDegraded:
    idx = targets.find_link(e.target);
    what = "link";
    if (!idx) examples = targets.link_name_examples();
    break;
  case PlanEventKind::GpuSlowdown:
  case PlanEventKind::Jitter:
    idx = targets.find_gpu(e.target);
    what = "GPU";
    if (!idx) examples = targets.gpu_name_examples();
    break;
  case PlanEventKind::ServerCrash:
    idx = targets.find_server(e.target);
    what = "server";
    if (!idx) examples = targets.server_name_examples();
    break;
  }
  if (!idx) fail(e, i, "unknown " + what + " name '" + e.target + "'; " + what + " names look like: " + examples);
  e.target_index = *idx;
}

/// Events of one class on one target must not overlap: link outages (flap or down), GPU
/// slowdowns, server crashes, link degradations, jitters. A degraded link that also goes
/// out is fine (different effects); see the check in validate_plan.
int resource_class(const PlanEvent& e) {
  if (e.is_link_outage()) return 0;
  switch (e.kind) {
  case PlanEventKind::GpuSlowdown: return 1;
  case PlanEventKind::ServerCrash: return 2;
  case PlanEventKind::LinkDegraded: return 3;
  case PlanEventKind::Jitter: return 4;
  default: return 5;
  }
}

} // namespace

bool has_rank_specific_events(const FaultPlan& plan) {
  return std::any_of(plan.events.begin(), plan.events.end(), [](const PlanEvent& e) { return e.is_rank_specific(); });
}

bool only_rank_specific_events(const FaultPlan& plan) {
  return std::all_of(plan.events.begin(), plan.events.end(), [](const PlanEvent& e) { return e.is_rank_specific(); });
}

void validate_plan(FaultPlan& plan, const PlanTargets& targets) {
  const RetransmitPolicy& rt = plan.retransmit;
  if (!(rt.timeout_per_retry_s > 0) || !std::isfinite(rt.timeout_per_retry_s))
    throw FaultError("fault plan: retransmit timeout per retry must be > 0 seconds");
  if (rt.retries < 1) throw FaultError("fault plan: retransmit retries must be ≥ 1");

  for (size_t i = 0; i < plan.events.size(); ++i) {
    check_times(plan.events[i], i);
    resolve(plan.events[i], i, targets);
  }

  // Contradictions: events of one "resource" class on one target must not overlap.
  // Link outages (flap or down) share a class; slowdowns of a GPU; crashes of a server.
  std::map<std::pair<int, int64_t>, std::vector<size_t>> by_target;
  for (size_t i = 0; i < plan.events.size(); ++i) {
    const PlanEvent& e = plan.events[i];
    by_target[{resource_class(e), e.target_index}].push_back(i);
  }
  for (auto& [key, idx] : by_target) {
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      return std::pair(plan.events[a].at_s, a) < std::pair(plan.events[b].at_s, b);
    });
    for (size_t k = 1; k < idx.size(); ++k) {
      const PlanEvent& prev = plan.events[idx[k - 1]];
      const PlanEvent& cur = plan.events[idx[k]];
      if (key.first == 2)
        fail(cur, idx[k], "server '" + cur.target + "' already crashes in " + describe(prev, idx[k - 1]));
      if (key.first == 4)
        fail(cur, idx[k],
             "GPU '" + cur.target + "' already has a " + to_string(cur.kind) + " event, " + describe(prev, idx[k - 1]) +
                 "; give one per target");
      if (cur.at_s < prev.until_s) {
        const std::string why = key.first == 0   ? "link '" + cur.target + "' is already out then, in "
                                : key.first == 3 ? "link '" + cur.target + "' is already degraded then, in "
                                                 : "GPU '" + cur.target + "' is already slowed then, in ";
        fail(cur, idx[k], why + describe(prev, idx[k - 1]) + "; merge the two events or make them not overlap");
      }
    }
  }

  std::stable_sort(plan.events.begin(), plan.events.end(), [](const PlanEvent& a, const PlanEvent& b) {
    if (a.at_s != b.at_s) return a.at_s < b.at_s;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.target_index < b.target_index;
  });
}

} // namespace twinscale::faults
