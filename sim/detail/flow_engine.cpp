#include "sim/detail/flow_engine_impl.hpp"

namespace twinscale::sim::detail {

void FlowEngine::Impl::build_platform() {
  const auto& fabric = paths.fabric();
  zone = new EcmpZone(paths); // owned by SimGrid's engine (root zone)
  sg4::NetZone* z = zone->get_iface();
  const auto& links = fabric.links();
  zone->up_.resize(links.size());
  zone->down_.resize(links.size());
  for (size_t i = 0; i < links.size(); ++i) {
    auto* l = z->create_split_duplex_link("l" + std::to_string(i), paths.link_bw(static_cast<uint32_t>(i)));
    zone->up_[i] = l->get_link_up();
    zone->down_[i] = l->get_link_down();
    zone->up_[i]->set_latency(paths.hop_latency_s(static_cast<uint32_t>(i), true));
    zone->down_[i]->set_latency(paths.hop_latency_s(static_cast<uint32_t>(i), false));
  }
  const int64_t gpus = fabric.gpus();
  // Queue-pair endpoints: as many as the channels a collective's plan can use.
  const int64_t ports_per_gpu = max_plan_channels(options.channels, fabric.shape().nics_per_server);
  port_host.resize(static_cast<size_t>(gpus));
  port_mailbox.resize(static_cast<size_t>(gpus));
  for (int64_t g = 0; g < gpus; ++g) {
    for (int64_t c = 0; c < ports_per_gpu; ++c) {
      auto* p = z->create_host("gpu" + std::to_string(g) + "." + std::to_string(c), 1e9);
      zone->add_endpoint(p, g, c);
      port_host[static_cast<size_t>(g)].push_back(p);
      port_mailbox[static_cast<size_t>(g)].push_back(sg4::Mailbox::by_name(p->get_name()));
    }
  }
  if (options.network.congestion_control != topology::CongestionControl::None) {
    cc = std::make_unique<congestion::FlowCongestion>(paths, options.network);
    if (cc->may_pause()) link_capacity = congestion::LinkCapacity::attach(*cc, zone->up_, zone->down_);
  }
  if (options.link_loads) loads.resize(2 * links.size());
  apply_fault_plan(); // profiles must be attached before links and hosts are sealed
  apply_degradation_windows();
  for (size_t i = 0; i < links.size(); ++i) {
    zone->up_[i]->seal();
    zone->down_[i]->seal();
  }
  z->seal();
}

/// Link utilisation (SimOptions::link_loads): a flow on the wire marks each direction of
/// its route busy from its start; at its end it adds its bytes (none if it failed).
void FlowEngine::Impl::count_load(const FlowSpec& f, double bytes, bool begin) {
  std::vector<topology::Hop> hops;
  const double now = sg4::Engine::get_clock();
  paths.route(f.src_gpu, f.dst_gpu, f.channel, hops); // the same path at the flow's start and end
  for (const topology::Hop& h : hops) {
    DirectionLoad& d = loads[2 * static_cast<size_t>(h.link) + (h.up ? 0 : 1)];
    if (begin) {
      if (d.active++ == 0) d.since = now;
    } else {
      d.bytes += bytes;
      if (--d.active == 0) d.busy_s += now - d.since;
    }
  }
}

void FlowEngine::Impl::launch_phase(Task* task) {
  const auto& spec = task->spec;
  const size_t begin = spec.phase_begin.empty() ? 0 : spec.phase_begin[task->phase];
  const size_t end = (spec.phase_begin.empty() || task->phase + 1 >= spec.phase_begin.size())
                         ? spec.flows.size()
                         : spec.phase_begin[task->phase + 1];
  task->left_in_phase = end - begin;
  if (begin == end) {
    flow_done(task, UINT32_MAX, false);
    return;
  }
  for (size_t f = begin; f < end; ++f)
    if (spec.flows[f].after < 0) launch_flow(task, static_cast<uint32_t>(f));
}

/// A flow waits for its delay (restored step latencies) and for the end of any outage
/// on its path as kernel timers, then becomes a transfer between two port hosts.
void FlowEngine::Impl::launch_flow(Task* task, uint32_t flow) {
  ++flows;
  ++flows_in_flight;
  const double delay = task->spec.flows[flow].delay_s;
  if (delay > 0) {
    simgrid::kernel::timer::Timer::set(sg4::Engine::get_clock() + delay,
                                       [this, task, flow]() { guarded([&] { begin_flow(task, flow); }); });
    return;
  }
  begin_flow(task, flow);
}

void FlowEngine::Impl::begin_flow(Task* task, uint32_t flow) {
  const FlowSpec& fs = task->spec.flows[flow];
  const double now = sg4::Engine::get_clock();
  if (const double resume = stall_end(fs, now); resume > now) {
    task->stalled_s = std::max(task->stalled_s, resume - now);
    simgrid::kernel::timer::Timer::set(resume, [this, task, flow]() { guarded([&] { send_flow(task, flow); }); });
    return;
  }
  send_flow(task, flow);
}

/// The transfer: a sender actor on the source port host puts `bytes` into the
/// destination port's mailbox, a receiver actor on the destination port host takes one
/// message from it. Receivers of one port are interchangeable (every message to that
/// mailbox goes from some source port to this port), so FIFO matching is exact.
/// Host-to-host Comm::sendto is not used: in 3.32 it detaches the comm, whose completion
/// then scans an engine-wide list.
///
/// The actors are pooled: a worker that has run its side of a transfer suspends itself
/// and is resumed, moved to the next transfer's host, for another one. Creating and
/// ending an actor per side cost a zeroed stack (kWorkerStackKiB) and an exception that unwinds
/// it (a quarter of the flow mode's time); the pool holds as many workers as transfers
/// were ever in flight at once (as many as the actors alive before).
void FlowEngine::Impl::send_flow(Task* task, uint32_t flow) {
  const FlowSpec& f = task->spec.flows[flow];
  sg4::Host* src = port_host[static_cast<size_t>(f.src_gpu)][f.channel];
  sg4::Host* dst = port_host[static_cast<size_t>(f.dst_gpu)][f.channel];
  sg4::Mailbox* mbox = port_mailbox[static_cast<size_t>(f.dst_gpu)][f.channel];
  if (link_capacity) link_capacity->starting(); // before on_start: a pause it decides waits
  if (!loads.empty()) count_load(f, 0, true);   // SimOptions::link_loads only
  // Congestion control (sim/congestion/flow_congestion.hpp): the flow joins its ports
  // now; its penalty is taken in run_worker, once every flow starting at this instant
  // has joined.
  if (cc) cc->join(f.src_gpu, f.dst_gpu, f.channel);
  Worker* r = take_worker(dst, false);
  r->mbox = mbox;
  Worker* w = take_worker(src, true);
  w->task = task;
  w->flow = flow;
  w->mbox = mbox;
  w->bytes = static_cast<uint64_t>(f.bytes + 0.5); // run_worker scales it under congestion control
  w->start = sg4::Engine::get_clock();
  for (Worker* x : {r, w})
    if (x->actor)
      x->actor->resume();
    else
      x->actor = sg4::Actor::create(x->sender ? "f" : "r", x->sender ? src : dst, [this, x]() { run_worker(x); });
}

/// Kernel context: an idle worker that has suspended itself, on `host`, or a new one (not
/// started yet: its actor is created by the caller).
FlowEngine::Impl::Worker* FlowEngine::Impl::take_worker(sg4::Host* host, bool sender) {
  for (size_t i = idle.size(); i-- > 0;) {
    Worker* w = idle[i];
    if (!w->actor->is_suspended()) continue; // finished this round: suspends itself next
    idle[i] = idle.back();
    idle.pop_back();
    if (w->actor->get_host() != host) w->actor->set_host(host);
    w->sender = sender;
    return w;
  }
  workers.push_back(std::make_unique<Worker>());
  workers.back()->sender = sender;
  return workers.back().get();
}

void FlowEngine::Impl::run_worker(Worker* w) {
  w->frame = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  for (;;) {
    if (w->sender) {
      // Congestion control's penalty (FlowCongestion::start_bytes), read here and not in
      // send_flow: the actors resumed at an instant run after every flow handed to them at
      // that instant has joined its ports (no simcall is answered in between), so flows
      // that start together count each other, in whatever order they were handed over.
      if (cc) {
        const FlowSpec& f = w->task->spec.flows[w->flow];
        w->bytes = static_cast<uint64_t>(cc->start_bytes(f.src_gpu, f.dst_gpu, f.channel, f.bytes) + 0.5);
      }
      const bool failed = put_flow(w->mbox, w->bytes);
      simgrid::kernel::actor::simcall_answered([&] {
        idle.push_back(w);
        end_flow(w->task, w->flow, failed, w->start);
      });
    } else {
      try {
        w->mbox->get<char>();
      } catch (const simgrid::Exception&) {
        // the sender reports the failure
      }
      simgrid::kernel::actor::simcall_answered([&] { idle.push_back(w); });
    }
    if (workers_retiring) return;
    sg4::this_actor::suspend(); // resumed by take_worker's caller with the next transfer, or by stop()
    if (workers_retiring) return;
  }
}

/// Actor context (a sender): sends `bytes` into `mbox`; true if the transfer failed.
///
/// PFC pauses (link_capacity) wait until the transfers handed to actors at this instant
/// have started: CM02 bounds a comm for good by the smallest bandwidth on its route when
/// it starts (link_capacity.hpp), so a flow started at the same instant as the incast
/// that pauses its link must start before the pause. The order SimGrid 3.32 runs things
/// in (EngineImpl::run): within one instant, sub-rounds run every ready actor until it
/// makes a simcall, then answer those simcalls in a fixed order (a put and the matching
/// get are answered in the same sub-round as both actors were made ready together: the
/// comm starts there, NetworkCm02Model::communicate bounding it), then, once no actor is
/// ready, the models are solved and the timers due run (kernel context: where flows are
/// handed to actors and cc decides pauses). So the sender makes one more simcall after
/// starting its comm, in the next sub-round: by then every comm handed to actors with
/// it has started, and the last one to get there applies the pauses held meanwhile.
/// (A zero-delay timer would not do: it runs in the same timer pass, before the actors.)
bool FlowEngine::Impl::put_flow(sg4::Mailbox* mbox, uint64_t bytes) {
  static char payload = 0;
  bool failed = false;
  sg4::CommPtr comm;
  try {
    comm = mbox->put_async(&payload, bytes);
  } catch (const simgrid::NetworkFailureException&) {
    failed = true;
  } catch (const simgrid::HostFailureException&) {
    failed = true;
  }
  if (link_capacity) simgrid::kernel::actor::simcall_answered([this] { link_capacity->started(); });
  if (failed) return true;
  try {
    comm->wait();
  } catch (const simgrid::NetworkFailureException&) {
    failed = true;
  } catch (const simgrid::HostFailureException&) {
    failed = true;
  }
  return failed;
}

/// Kernel context: a flow's transfer ended at the current time. With congestion control
/// its last byte still waits behind the standing queues on its path (cc->on_end): the
/// flow is delivered by a kernel timer that much later (no actor sleeps for it).
void FlowEngine::Impl::end_flow(Task* task, uint32_t flow, bool failed, double start) {
  if (cc && !stopped) {
    const FlowSpec& fs = task->spec.flows[flow];
    const double queued = cc->on_end(fs.src_gpu, fs.dst_gpu, fs.channel);
    if (queued > 0 && !failed) {
      simgrid::kernel::timer::Timer::set(sg4::Engine::get_clock() + queued,
                                         [this, task, flow, start]() { deliver_flow(task, flow, false, start); });
      return;
    }
  }
  deliver_flow(task, flow, failed, start);
}

/// Kernel context: a flow's last byte has arrived at the current time.
void FlowEngine::Impl::deliver_flow(Task* task, uint32_t flow, bool failed, double start) {
  --flows_in_flight;
  if (stopped) return;
  const FlowSpec& fs = task->spec.flows[flow];
  if (!loads.empty()) count_load(fs, failed ? 0.0 : fs.bytes, false);
  task->stalled_s = std::max(task->stalled_s, stalled_seconds(fs, start, sg4::Engine::get_clock()));
  guarded([&] {
    core.set_now(std::max(core.now(), sg4::Engine::get_clock()));
    flow_done(task, flow, failed);
  });
  arm_core_timer();
}

void FlowEngine::Impl::flow_done(Task* task, uint32_t flow, bool failed) {
  task->failed = task->failed || failed;
  if (flow != UINT32_MAX) {
    if (!task->dependents.empty())
      for (uint32_t d : task->dependents[flow]) launch_flow(task, d);
    if (--task->left_in_phase > 0) return;
  }
  ++task->phase;
  const size_t phases = task->spec.phase_begin.empty() ? 1 : task->spec.phase_begin.size();
  if (task->phase < phases && !task->failed) {
    launch_phase(task);
    return;
  }
  const uint32_t id = task->comm_id;
  const bool f = task->failed;
  const double stalled = task->stalled_s;
  tasks[id].reset();
  listener.on_comm_done(id, f, stalled); // callers run it guarded
  if (f) stop();                         // the job has failed: nothing runs any more
}

/// Nothing runs any more (the job failed, the executor threw): flows in flight end
/// without effect and the event core is not advanced; the run ends once they have.
void FlowEngine::Impl::stop() {
  stopped = true;
  if (!workers_ended && !workers.empty()) {
    workers_ended = true;
    check_worker_stacks(); // while the stacks are there
    if (flows_in_flight == 0) {
      // The run is over with no transfer in flight: every worker returns from run_worker,
      // those suspended resumed here, the rest (a receiver whose transfer has ended but
      // that has not run since) when they next run, in time linear in the workers.
      // Actor::kill_all would put each killed actor on SimGrid's run list through a
      // search of that list (EngineImpl::add_actor_to_run_list in 3.32), time quadratic
      // in the workers: 6 % of a 65,536-GPU flow run, which has ~10^6 of them.
      workers_retiring = true;
      for (Worker* w : idle)
        if (w->actor) w->actor->resume();
    } else {
      // transfers in flight (a failed job): killed, from a timer rather than from the
      // simcall of the worker that may be calling this
      simgrid::kernel::timer::Timer::set(sg4::Engine::get_clock(), []() { sg4::Actor::kill_all(); });
    }
  }
  pending.clear();
  if (core_timer != nullptr) core_timer->remove();
  core_timer = nullptr;
  for (auto* timers : {&crash_timers, &window_timers}) {
    for (auto*& t : *timers)
      if (t != nullptr) t->remove();
    timers->assign(timers->size(), nullptr);
  }
}

/// SimGrid zeroes a worker's stack when it creates it, so a window of it that is still
/// zero has never been reached. The window starts 4 KiB above the stack's end (the stack
/// ends kWorkerStackKiB below its top, which lies less than 1 KiB above run_worker's
/// frame: SimGrid's entry frames, 192 bytes measured) and is 512 bytes long: a worker
/// whose calls reached it came within 4.5 KiB of overflowing.
void FlowEngine::Impl::check_worker_stacks() {
  constexpr uintptr_t kAboveFrame = 1024, kMargin = 3 * 1024, kWindow = 512;
  for (const auto& w : workers) {
    if (w->frame == 0) continue; // never ran
    const uintptr_t from = w->frame + kAboveFrame - kWorkerStackKiB * 1024 + kMargin;
    const auto* word = reinterpret_cast<const uint64_t*>(from);
    for (size_t i = 0; i < kWindow / sizeof(uint64_t); ++i) {
      if (word[i] == 0) continue;
      if (!error)
        error = std::make_exception_ptr(
            std::logic_error("internal error: a flow worker's calls came within 4.5 KiB of the end of its " +
                             std::to_string(kWorkerStackKiB) + " KiB stack; raise FlowEngine::Impl::kWorkerStackKiB"));
      return;
    }
  }
}

/// The event core's events (compute completions, closed-form timers, speed changes) run
/// in kernel context from one timer at the core's next event time: no actor waits for
/// them (a driver actor cost a condition-variable wait, a CPU sleep action and two
/// context switches per distinct event time, most of the flow mode's run time).
void FlowEngine::Impl::on_core_timer() {
  core_timer = nullptr;
  const double now = sg4::Engine::get_clock();
  const double due = now + 1e-12 + 1e-15 * now; // absorbs the clock's rounding
  while (!stopped && !core.empty() && core.next_time() <= due) guarded([&] { core.dispatch_next(); });
  arm_core_timer();
}

void FlowEngine::Impl::arm_core_timer() {
  if (stopped) return;
  if (core.empty()) {
    if (core_timer != nullptr) core_timer->remove();
    core_timer = nullptr;
    // the job is over once nothing is left to run: a later crash no longer matters
    if (flows_in_flight == 0 && pending.empty()) stop();
    return;
  }
  const double at = std::max(core.next_time(), sg4::Engine::get_clock());
  if (core_timer != nullptr) {
    if (core_timer_at <= at) return; // fires first and re-arms
    core_timer->remove();
  }
  core_timer_at = at;
  core_timer = simgrid::kernel::timer::Timer::set(at, [this]() { on_core_timer(); });
}

FlowEngine::FlowEngine(CompletionListener& listener, const NetworkPaths& paths, std::vector<int64_t> slot_gpu,
                       const SimOptions& options)
    : impl_(std::make_unique<Impl>(listener, paths, std::move(slot_gpu), options)) {}

FlowEngine::~FlowEngine() = default;

double FlowEngine::now() const { return impl_->core.now(); }

int64_t FlowEngine::flows_started() const { return impl_->flows; }

std::vector<LinkLoad> FlowEngine::link_loads() const {
  std::vector<LinkLoad> out;
  for (size_t i = 0; i < impl_->loads.size(); ++i) {
    const auto& d = impl_->loads[i];
    if (d.bytes > 0 || d.busy_s > 0) out.push_back({static_cast<uint32_t>(i / 2), i % 2 == 0, d.bytes, d.busy_s});
  }
  return out;
}

void FlowEngine::start_compute(int32_t slot, uint32_t op, double seconds) {
  impl_->core.start_compute(slot, op, seconds);
}

void FlowEngine::set_comm_ctas(int32_t slot, int32_t ctas) { impl_->core.set_comm_ctas(slot, ctas); }

void FlowEngine::start_comm(uint32_t comm_id, CommTask task) {
  if (task.closed_form_s >= 0) {
    impl_->core.add_timer(impl_->core.now() + task.closed_form_s, comm_id);
    return;
  }
  if (impl_->tasks.size() <= comm_id) impl_->tasks.resize(comm_id + 1);
  auto t = std::make_unique<Impl::Task>();
  t->comm_id = comm_id;
  t->spec = std::move(task);
  Impl::Task* raw = t.get();
  impl_->tasks[comm_id] = std::move(t);
  bool has_deps = false;
  for (const auto& f : raw->spec.flows) has_deps = has_deps || f.after >= 0;
  if (has_deps) {
    raw->dependents.resize(raw->spec.flows.size());
    for (uint32_t i = 0; i < raw->spec.flows.size(); ++i)
      if (raw->spec.flows[i].after >= 0) raw->dependents[static_cast<size_t>(raw->spec.flows[i].after)].push_back(i);
  }
  Impl* impl = impl_.get();
  impl->pending.emplace_back([impl, raw]() { impl->launch_phase(raw); });
}

void FlowEngine::run(const std::function<void()>& start) {
  static int argc = 0;
  static std::vector<std::string> args = {"twinscale-sim",
                                          "--cfg=network/model:CM02",
                                          "--cfg=network/crosstraffic:0",
                                          "--cfg=network/TCP-gamma:1e18",
                                          "--cfg=contexts/stack-size:" + std::to_string(Impl::kWorkerStackKiB),
                                          "--cfg=contexts/guard-size:0",
                                          "--log=root.thres:critical"};
  static std::vector<char*> argv;
  argv.clear();
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  argc = static_cast<int>(args.size());
  // One engine per process (SimGrid 3.32 cannot re-create it): simulate() runs the flow
  // mode in a forked child that exits after the run, so the engine is never destroyed.
  auto* engine = new sg4::Engine(&argc, argv.data());
  impl_->build_platform();
  Impl* impl = impl_.get();
  simgrid::kernel::timer::Timer::set(0.0, [impl, &start]() {
    impl->guarded(start);
    impl->arm_core_timer();
  });
  impl->arm_window_timers();
  if (impl_->options.faults != nullptr) {
    for (const auto& e : impl_->options.faults->events) {
      if (e.kind != faults::PlanEventKind::ServerCrash) continue;
      const double at = e.at_s;
      const std::string why = "server '" + e.target + "' crashed at " + std::to_string(at) + " s";
      const size_t index = impl->crash_timers.size();
      impl->crash_timers.push_back(simgrid::kernel::timer::Timer::set(at, [impl, index, why]() {
        impl->crash_timers[index] = nullptr; // fired: no longer to remove
        impl->guarded([&] {
          impl->core.set_now(std::max(impl->core.now(), sg4::Engine::get_clock()));
          impl->listener.on_job_fault(why);
        });
        impl->stop();
      }));
    }
  }
  engine->run();
  if (impl_->error) std::rethrow_exception(impl_->error);
}

} // namespace twinscale::sim::detail
