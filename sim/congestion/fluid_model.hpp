// A fluid model of a lossless RoCE fabric under congestion control: queues per port,
// a sending rate per flow, ECN marking, delay signals, PFC pause and resume. Fixed time
// step (explicit Euler); every equation and default, with its source, is in
// docs/congestion.md. This is the standalone model the validation cases run, and the
// one the flow engine's congestion model is derived from (cc_penalty.hpp,
// port_equilibrium.hpp).
//
// A port is the egress queue of a device that feeds one link direction. A flow crosses
// an ordered list of ports; the receiver drains the last one at once. Each port serves
// min(capacity · dt, backlog) per step, split among its flows in proportion to their
// backlog (FIFO in the fluid limit). Marking (RED on the port's backlog) and queueing
// delay are summed along the path and reach the sender `feedback_delay_s` later.
//
// PFC: a port whose far end is a switch (`pfc_ingress`) is paused when the bytes that
// arrived through it and still sit in that switch's egress queues pass XOFF, and resumes
// below XON. A paused port stops serving, its own backlog grows, and the pause reaches
// further upstream: that is how victim flows that share a paused port are blocked
// (head-of-line blocking) and how a receiver that stops draining becomes a PFC storm.
// Without PFC a switch port drops what its buffer cannot hold; dropped bytes are sent
// again (goodput lost, no byte lost).
#pragma once

#include <cstdint>
#include <vector>

#include "topology/congestion_spec.hpp"

namespace twinscale::sim::congestion {

struct FluidPort {
  double capacity_bytes_per_s = 0;
  bool pfc_ingress = false; // far end is a switch: PFC may pause this port
  bool marks_ecn = false;   // a switch egress queue: RED marking applies
  /// Capacity factor changes at times (link flap: 0 then 1; PFC storm: a receiver that
  /// stops draining). Sorted by time.
  std::vector<std::pair<double, double>> capacity_changes;
};

struct FluidFlow {
  std::vector<uint32_t> path; // ports, sender's NIC first
  double start_s = 0;
  double bytes = 0; // 0: never ends (long-lived)
  int32_t hops = 1; // switch hops (Swift's hop scaling)
};

struct FluidOptions {
  double dt_s = 1e-6;
  double end_s = 0.01;
  double sample_every_s = 10e-6;
  double base_rtt_s = 4e-6;       // propagation and switching, no queueing
  double host_queue_bytes = 64e3; // a sender stops injecting while its NIC queue is this full
  bool stop_when_done = true;     // end at the last finite flow's completion
};

struct FluidSample {
  double t_s = 0;
  std::vector<double> rate;       // per flow: sending rate, bytes/s
  std::vector<double> throughput; // per flow: delivered over the last sample interval, bytes/s
  std::vector<double> queue;      // per port: backlog, bytes
  std::vector<uint8_t> paused;    // per port
};

struct FluidResult {
  std::vector<FluidSample> samples;
  std::vector<double> finish_s;        // per flow (-1: did not finish)
  std::vector<double> delivered_bytes; // per flow
  std::vector<double> paused_s;        // per port: time spent paused
  std::vector<double> max_queue_bytes; // per port
  double dropped_bytes = 0;
  double end_s = 0;
};

class FluidModel {
public:
  FluidModel(topology::NetworkCcSpec spec, std::vector<FluidPort> ports, std::vector<FluidFlow> flows,
             FluidOptions options);
  FluidResult run();

  /// RED marking probability of a queue of `bytes` (DCQCN's Kmin/Kmax/Pmax).
  static double marking_probability(const topology::DcqcnSpec& d, double bytes);

private:
  struct FlowState;
  struct Run;
  void control_flows(Run& r, double t) const;
  void serve_ports(Run& r) const;
  void update_queues(Run& r) const;
  bool finish_step(Run& r, double t) const;
  void control(FlowState& f, const FluidFlow& spec, double now, double p, double qdelay_s, double line_rate) const;
  double swift_target_s(const FlowState& f, int32_t hops) const;
  void order_ports();

  topology::NetworkCcSpec spec_;
  std::vector<FluidPort> ports_;
  std::vector<FluidFlow> flows_;
  FluidOptions options_;
  std::vector<uint32_t> port_order_;
};

} // namespace twinscale::sim::congestion
