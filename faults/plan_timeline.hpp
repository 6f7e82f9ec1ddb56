// A validated FaultPlan turned into the state changes an executor applies, in time order,
// with the M13 retransmit semantics already decided: what sim/ attaches to SimGrid link
// bandwidth/state profiles and host speed profiles, and what a CPU/GPU backend injects.
//
// Per link outage [at, until) of length d, with limit L = retransmit.tolerated_outage_s():
//   d ≤ L : Stall at `at` (flows make no progress; SimGrid: bandwidth 1 B/s), Resume at `until`;
//   d > L : Stall at `at`, Fail at `at + L` (flows on the link fail; SimGrid: state OFF),
//           Restore at `until` if finite (the link carries traffic again).
// Per GPU slowdown: Speed(1 − slowdown) at `at`, Speed(1) at `until` if finite.
// Per server crash: Crash at `at`.
#pragma once

#include <cstdint>
#include <vector>

#include "faults/fault_plan.hpp"

namespace twinscale::faults {

enum class ChangeKind : uint8_t {
  LinkStall,     // link stops carrying bytes; flows wait
  LinkResume,    // stall over within the retransmit limit: flows continue
  LinkFail,      // outage outlasted the retransmit limit: flows on the link fail
  LinkRestore,   // the failed link is back (new flows may use it)
  GpuSpeed,      // GPU compute speed factor becomes `speed_factor`
  ServerCrash,   // every GPU of the server stops for good
  LinkBandwidth, // a degraded link's bandwidth factor becomes `speed_factor` (1: restored)
};

struct PlanChange {
  double at_s = 0;
  ChangeKind kind = ChangeKind::LinkStall;
  int64_t target_index = -1; // link id, GPU index or server index (as in PlanEvent)
  double speed_factor = 1.0; // GpuSpeed: compute speed; LinkBandwidth: bandwidth factor
  size_t event = 0;          // index of the originating event in plan.events
  bool ends_event = false;   // Resume, Restore and the speed reset at a slowdown's end
};

/// The changes of a validated plan (validate_plan() first: target_index must be set),
/// sorted by time; at one time, changes that end an event come before changes that start
/// one (back-to-back events on one link or GPU), then by kind, target and event.
std::vector<PlanChange> plan_timeline(const FaultPlan& plan);

const char* to_string(ChangeKind k);

} // namespace twinscale::faults
