// The flow backend: SimGrid 3.32 (CM02, no cross-traffic, TCP window bound disabled)
// on a platform built from the topology::Fabric.
//
// Platform: `channels` "port" hosts per GPU, the endpoints of that GPU's NCCL queue
// pairs, and one host for the driver actor. Every fabric link (NVLink, PCIe,
// NIC–ToR, switch–switch) is a split-duplex SimGrid link with the achieved bandwidth of
// sim::detail::NetworkPaths. Routing is a custom zone (EcmpZone, a NetZoneImpl subclass)
// whose get_local_route asks Fabric::route for (src GPU, dst GPU, flow id = channel):
// every queue pair keeps one ECMP path, as RoCE connections do, and nothing is stored
// per pair. Cost: SimGrid asks the zone for each comm (O(hops)); memory stays
// proportional to links and hosts (~1 KB each). SimGrid's stock zones cannot do this:
// FatTree routes by destination only and Full/Floyd tables need O(n²) memory.
//
// Flows run in actors (a sender and a receiver per flow, from a pool of workers that
// suspend themselves between transfers): comms started without actors are quadratic in
// 3.32 (simgrid-notes.md). Compute ops and closed-form collectives are not SimGrid
// activities: they live in the event core (event_core.hpp), whose events run in kernel
// context from one SimGrid timer (simgrid::kernel::timer::Timer) armed at the core's next
// event time; flow completions, delays and outage ends run there too (a flow's sender
// hands its completion back with one simcall). No actor waits for the core: a driver
// actor woken per distinct event time cost a condition-variable wait, a CPU sleep action
// and two context switches each, half the flow mode's time. GPU slowdowns of a fault
// plan are speed changes of the core (what a host speed profile would do to an exec).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/detail/network_paths.hpp"
#include "sim/detail/time_engine.hpp"
#include "sim/simulate.hpp"

namespace twinscale::sim::detail {

class FlowEngine final : public TimeEngine {
public:
  FlowEngine(CompletionListener& listener, const NetworkPaths& paths, std::vector<int64_t> slot_gpu,
             const SimOptions& options);
  ~FlowEngine() override;

  double now() const override;
  void start_compute(int32_t slot, uint32_t op, double seconds) override;
  void set_comm_ctas(int32_t slot, int32_t ctas) override;
  void start_comm(uint32_t comm_id, CommTask task) override;
  void run(const std::function<void()>& start) override;
  int64_t flows_started() const override;
  std::vector<LinkLoad> link_loads() const override;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace twinscale::sim::detail
