// The flow engine's private parts (FlowEngine::Impl and the ECMP zone), shared by
// flow_engine.cpp (platform, flows, workers, timers) and flow_engine_faults.cpp (fault
// plans, degradation windows, outages a flow meets). Not part of the sim/ interface.
#pragma once

#include "sim/detail/flow_engine.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/kernel/ProfileBuilder.hpp>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <simgrid/simix.hpp>
#include <xbt/log.h>

#include <cmath>
#include <cstdio>
#include <deque>
#include <exception>
#include <map>
#include <sstream>
#include <string>

#include "faults/fault_plan.hpp"
#include "schedules/error.hpp"
#include "sim/congestion/flow_congestion.hpp"
#include "sim/congestion/link_capacity.hpp"
#include "sim/detail/degradation_windows.hpp"
#include "sim/detail/event_core.hpp"
#include "sim/error.hpp"

namespace twinscale::sim::detail {

namespace sg4 = simgrid::s4u;
namespace sgr = simgrid::kernel::routing;

struct Endpoint {
  int64_t gpu = -1;
  int32_t channel = -1; // -1: the GPU's compute host
};

/// Per-flow ECMP routing: see flow_engine.hpp.
class EcmpZone final : public sgr::NetZoneImpl {
public:
  explicit EcmpZone(const NetworkPaths& paths) : sgr::NetZoneImpl("twinscale-fabric"), paths_(paths) {}

  void add_endpoint(const sg4::Host* host, int64_t gpu, int32_t channel) {
    const auto id = host->get_netpoint()->id();
    if (endpoints_.size() <= id) endpoints_.resize(id + 1);
    endpoints_[id] = {gpu, channel};
  }
  std::vector<sg4::Link*> up_, down_;

  void get_local_route(const sgr::NetPoint* src, const sgr::NetPoint* dst, sgr::Route* into, double* latency) override {
    const Endpoint& s = endpoints_.at(src->id());
    const Endpoint& d = endpoints_.at(dst->id());
    if (s.gpu == d.gpu) return;
    paths_.route(s.gpu, d.gpu, static_cast<uint32_t>(s.channel < 0 ? 0 : s.channel), hops_);
    for (const topology::Hop& h : hops_) {
      sg4::Link* l = h.up ? up_[h.link] : down_[h.link];
      into->link_list_.push_back(l->get_impl());
      if (latency != nullptr) *latency += l->get_latency();
    }
  }

private:
  const NetworkPaths& paths_;
  std::vector<Endpoint> endpoints_;
  std::vector<topology::Hop> hops_;
};

struct FlowEngine::Impl {
  struct Task {
    uint32_t comm_id = 0;
    CommTask spec;
    std::vector<std::vector<uint32_t>> dependents; // flows waiting for flow i
    size_t phase = 0;
    size_t left_in_phase = 0;
    bool failed = false;
    double stalled_s = 0;
  };

  CompletionListener& listener;
  const NetworkPaths& paths;
  std::vector<int64_t> slot_gpu;
  const SimOptions& options;
  EventCore core;
  EcmpZone* zone = nullptr;
  std::vector<std::vector<sg4::Host*>> port_host;       // by GPU, channel
  std::vector<std::vector<sg4::Mailbox*>> port_mailbox; // by GPU, channel
  std::vector<std::unique_ptr<Task>> tasks;
  int64_t flows = 0;
  int64_t flows_in_flight = 0; // started, delayed or waiting for an outage to end
  std::exception_ptr error;    // first exception thrown by the executor
  /// Transfers the executor asked for while it runs: started once it has returned (a
  /// flow that completes at once must not re-enter it).
  std::deque<std::function<void()>> pending;
  simgrid::kernel::timer::Timer* core_timer = nullptr; // at the event core's next event
  double core_timer_at = 0;
  std::vector<simgrid::kernel::timer::Timer*> crash_timers;
  /// Degradation windows (NetworkPaths::windows()): by link, the bandwidth factor in
  /// effect (read by the link directions' NONLINEAR sharing callback), and the timers
  /// at the windows' edges.
  std::vector<double> window_factor;
  std::vector<simgrid::kernel::timer::Timer*> window_timers;
  bool stopped = false;          // the job failed or the executor threw: nothing runs any more
  bool workers_ended = false;    // stop() has ended the workers: killed, or retiring
  bool workers_retiring = false; // the run is over with no transfer in flight: workers return
  /// An actor that runs one side of one transfer at a time (see send_flow).
  struct Worker {
    sg4::ActorPtr actor;
    bool sender = false;
    Task* task = nullptr;
    uint32_t flow = 0;
    sg4::Mailbox* mbox = nullptr;
    uint64_t bytes = 0;
    double start = 0;
    uintptr_t frame = 0; // address of run_worker's frame: the worker's stack lies below it
  };
  /// Stack of a worker actor (SimGrid's contexts/stack-size), in KiB: as many workers as
  /// transfers in flight at once (4 per GPU in a DP phase), so at 131,072 GPUs each KiB
  /// is 0.5 GiB. The deepest a worker went (tests/sim, gpt-175b-megascale at 1,024 and
  /// 12,288 GPUs): 6.9 KiB, a transfer failing on a link that went down
  /// (NetworkFailureException unwinding from its wait); 4.5 KiB, a worker killed as a
  /// failed job ends (a run that ends well lets its workers return); 1.8 KiB otherwise.
  /// check_worker_stacks() fails a run that came within 4.5 KiB of the end (there is no
  /// guard page: an overflow would corrupt the heap silently).
  static constexpr unsigned kWorkerStackKiB = 16;
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<Worker*> idle; // done with their transfer (suspended, or about to be)
  std::map<uint32_t, std::vector<std::pair<double, double>>> link_stalls; // link → [from, to)
  std::unique_ptr<congestion::FlowCongestion> cc;                         // [network] congestion_control (none: null)
  /// SimOptions::link_loads, per link direction (2·link + down): bytes carried, busy
  /// time, flows on it now and since when.
  struct DirectionLoad {
    double bytes = 0, busy_s = 0, since = 0;
    int32_t active = 0;
  };
  std::vector<DirectionLoad> loads;
  void count_load(const FlowSpec& f, double bytes, bool begin);
  std::unique_ptr<congestion::LinkCapacity> link_capacity; // PFC pauses on SimGrid links (cc's)

  Impl(CompletionListener& l, const NetworkPaths& p, std::vector<int64_t> sg, const SimOptions& o)
      : listener(l), paths(p), slot_gpu(std::move(sg)), options(o), core(l, slot_gpu.size(), o.comm_rate_factors) {}

  /// Runs executor code inside an actor, then the SimGrid calls it requested. An
  /// exception (a schedule that cannot run) must not escape into SimGrid's context: it
  /// stops the simulation and is rethrown by run().
  template <class F>
  void guarded(F&& fn) {
    if (stopped) return;
    try {
      fn();
      while (!pending.empty() && !stopped) {
        auto next = std::move(pending.front());
        pending.pop_front();
        next();
      }
    } catch (...) {
      if (!error) error = std::current_exception();
      stop();
    }
  }

  void build_platform();
  void apply_fault_plan();
  void apply_degradation_windows();
  void arm_window_timers();
  double stalled_seconds(const FlowSpec& f, double start, double end) const;
  double stall_end(const FlowSpec& f, double t) const;
  void launch_phase(Task* task);
  void launch_flow(Task* task, uint32_t flow);
  void begin_flow(Task* task, uint32_t flow);
  void send_flow(Task* task, uint32_t flow);
  bool put_flow(sg4::Mailbox* mbox, uint64_t bytes);
  Worker* take_worker(sg4::Host* host, bool sender);
  void run_worker(Worker* w);
  void end_flow(Task* task, uint32_t flow, bool failed, double start);
  void deliver_flow(Task* task, uint32_t flow, bool failed, double start);
  void flow_done(Task* task, uint32_t flow, bool failed);
  void on_core_timer();
  void arm_core_timer();
  void stop();
  void check_worker_stacks();
};

} // namespace twinscale::sim::detail
