// SimGrid's side of the dynamic congestion model: changes a link direction's bandwidth
// while flows cross it (PFC pauses, flow_congestion.hpp).
//
// What SimGrid 3.32 supports (read in its source, src/surf/network_cm02.cpp at v3.32):
// s4u::Comm::set_rate bounds a communication only before it starts, and a started
// activity's model action (Action::set_bound) is not reachable through the installed
// headers, so a flow in flight cannot be re-rated directly. A link's bandwidth can:
// s4u::Link::set_bandwidth updates the link's max-min constraint and the flows in flight
// share the new capacity at once. The limit: CM02 also bounds each new flow by the
// smallest bandwidth on its route *when it starts* (comm_action_set_bounds) and never
// lifts that bound, so a flow that starts while a link of its path is paused keeps the
// paused link's capacity as its ceiling after the pause ends. (The bandwidth-factor
// callback does not help: in 3.32 it scales the flow's effective rate, not that bound.)
// FlowCongestion counts those flows (Stats::started_paused).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace simgrid::s4u {
class Link;
}

namespace twinscale::sim::congestion {

class FlowCongestion;

class LinkCapacity {
public:
  /// Links the up and down SimGrid links of every fabric link to `cc`'s capacity
  /// changes: what the flow engine calls.
  static std::unique_ptr<LinkCapacity> attach(FlowCongestion& cc, const std::vector<simgrid::s4u::Link*>& up,
                                              const std::vector<simgrid::s4u::Link*>& down);

  /// `dirs[2·link + (down ? 1 : 0)]`: the SimGrid link of each link direction.
  explicit LinkCapacity(std::vector<simgrid::s4u::Link*> dirs);

  /// Sets direction `dir`'s bandwidth (bytes/s), or once no transfer is starting (below).
  void set(uint32_t dir, double bytes_per_s);

  /// A transfer is about to start (its comm does not exist yet): capacity changes wait
  /// until it has (`started`), so that CM02 does not bound it by a pause decided at the
  /// same instant (see above). The flow engine calls `starting` in kernel context when
  /// it hands a transfer to its actors, `started` once the comm has started.
  void starting() { ++starting_; }
  /// The transfer announced by `starting` has started: when none is starting any more,
  /// the capacity changes held meanwhile are applied, in the order they were asked for.
  void started();

private:
  std::vector<simgrid::s4u::Link*> dirs_;
  int64_t starting_ = 0;
  std::vector<std::pair<uint32_t, double>> held_; // direction, bytes/s
};

} // namespace twinscale::sim::congestion
