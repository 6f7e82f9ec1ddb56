#include "faults/plan_timeline.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "schedules/error.hpp"

namespace twinscale::faults {

const char* to_string(ChangeKind k) {
  switch (k) {
  case ChangeKind::LinkStall: return "link-stall";
  case ChangeKind::LinkResume: return "link-resume";
  case ChangeKind::LinkFail: return "link-fail";
  case ChangeKind::LinkRestore: return "link-restore";
  case ChangeKind::GpuSpeed: return "gpu-speed";
  case ChangeKind::ServerCrash: return "server-crash";
  case ChangeKind::LinkBandwidth: return "link-bandwidth";
  }
  return "?";
}

std::vector<PlanChange> plan_timeline(const FaultPlan& plan) {
  std::vector<PlanChange> out;
  const double limit = plan.retransmit.tolerated_outage_s();
  for (size_t i = 0; i < plan.events.size(); ++i) {
    const PlanEvent& e = plan.events[i];
    TWINSCALE_ASSERT(e.target_index >= 0, "plan_timeline needs a validated plan (validate_plan)");
    auto add = [&](double at, ChangeKind kind, bool ends, double speed = 1.0) {
      out.push_back(PlanChange{at, kind, e.target_index, speed, i, ends});
    };
    switch (e.kind) {
    case PlanEventKind::LinkFlap:
    case PlanEventKind::LinkDown:
      add(e.at_s, ChangeKind::LinkStall, false);
      if (outage_outcome(e.duration_s(), plan.retransmit) == OutageOutcome::Stall) {
        add(e.until_s, ChangeKind::LinkResume, true);
      } else {
        add(e.at_s + limit, ChangeKind::LinkFail, false);
        if (std::isfinite(e.until_s)) add(e.until_s, ChangeKind::LinkRestore, true);
      }
      break;
    case PlanEventKind::GpuSlowdown:
      add(e.at_s, ChangeKind::GpuSpeed, false, e.speed_factor());
      if (std::isfinite(e.until_s)) add(e.until_s, ChangeKind::GpuSpeed, true, 1.0);
      break;
    case PlanEventKind::ServerCrash: add(e.at_s, ChangeKind::ServerCrash, false); break;
    case PlanEventKind::LinkDegraded:
      add(e.at_s, ChangeKind::LinkBandwidth, false, e.bandwidth_factor);
      if (std::isfinite(e.until_s)) add(e.until_s, ChangeKind::LinkBandwidth, true, 1.0);
      break;
    case PlanEventKind::Jitter: break; // whole-run pauses drawn per iteration, no change in time
    }
  }
  std::sort(out.begin(), out.end(), [](const PlanChange& a, const PlanChange& b) {
    return std::tuple(a.at_s, !a.ends_event, a.kind, a.target_index, a.event) <
           std::tuple(b.at_s, !b.ends_event, b.kind, b.target_index, b.event);
  });
  return out;
}

} // namespace twinscale::faults
