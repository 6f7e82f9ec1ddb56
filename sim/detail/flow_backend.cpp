#include "sim/detail/flow_backend.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/kernel/ProfileBuilder.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <cstdio>
#include <exception>
#include <sstream>
#include <string>

#include "schedules/error.hpp"

namespace twinscale::sim::detail {

namespace sg4 = simgrid::s4u;
namespace sgr = simgrid::kernel::routing;

namespace {

/// Nominal compute speed of a GPU host: one unit per nanosecond of device-model time.
constexpr double kSpeed = 1e9;

struct Endpoint {
  int64_t gpu = -1;
  int32_t channel = -1; // -1: the GPU's compute host
};

/// Per-flow ECMP routing: see flow_backend.hpp.
class EcmpZone final : public sgr::NetZoneImpl {
public:
  explicit EcmpZone(const NetworkPaths& paths) : sgr::NetZoneImpl("twinscale-fabric"), paths_(paths) {}

  void add_endpoint(const sg4::Host* host, int64_t gpu, int32_t channel) {
    const auto id = host->get_netpoint()->id();
    if (endpoints_.size() <= id) endpoints_.resize(id + 1);
    endpoints_[id] = {gpu, channel};
  }
  std::vector<sg4::Link*> up_, down_;

  void get_local_route(const sgr::NetPoint* src, const sgr::NetPoint* dst, sgr::Route* into,
                       double* latency) override {
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

} // namespace

struct FlowBackend::Impl {
  struct Task {
    uint32_t comm_id = 0;
    CommTask spec;
    std::vector<std::vector<uint32_t>> dependents; // flows waiting for flow i
    size_t phase = 0;
    size_t left_in_phase = 0;
    bool failed = false;
  };

  CompletionListener& listener;
  const NetworkPaths& paths;
  std::vector<int64_t> slot_gpu;
  const SimOptions& options;
  EcmpZone* zone = nullptr;
  std::vector<sg4::Host*> gpu_host;              // by GPU
  std::vector<std::vector<sg4::Host*>> port_host; // by GPU, channel
  std::vector<std::unique_ptr<Task>> tasks;
  int64_t flows = 0;
  std::exception_ptr error; // first exception thrown by the executor inside an actor

  /// Runs executor code inside an actor: an exception (a schedule that cannot run) must
  /// not escape into SimGrid's context; it stops the simulation and is rethrown by run().
  template <class F>
  void guarded(F&& fn) {
    if (error) return;
    try {
      fn();
    } catch (...) {
      error = std::current_exception();
      sg4::Actor::kill_all();
    }
  }

  Impl(CompletionListener& l, const NetworkPaths& p, std::vector<int64_t> sg, const SimOptions& o)
      : listener(l), paths(p), slot_gpu(std::move(sg)), options(o) {}

  void build_platform();
  void launch_phase(Task* task);
  void launch_flow(Task* task, uint32_t flow);
  void flow_done(Task* task, uint32_t flow, bool failed);
};

void FlowBackend::Impl::build_platform() {
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
    l->seal();
  }
  const int64_t gpus = fabric.gpus();
  const double slowed = kSpeed / (1.0 + options.device.nccl_compute_slowdown);
  gpu_host.resize(static_cast<size_t>(gpus));
  port_host.resize(static_cast<size_t>(gpus));
  for (int64_t g = 0; g < gpus; ++g) {
    auto* h = z->create_host("gpu" + std::to_string(g), std::vector<double>{kSpeed, slowed});
    zone->add_endpoint(h, g, -1);
    gpu_host[static_cast<size_t>(g)] = h;
    for (int c = 0; c < options.channels; ++c) {
      auto* p = z->create_host("gpu" + std::to_string(g) + "." + std::to_string(c), kSpeed);
      zone->add_endpoint(p, g, c);
      port_host[static_cast<size_t>(g)].push_back(p);
    }
  }
  z->seal();
}

void FlowBackend::Impl::launch_phase(Task* task) {
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

void FlowBackend::Impl::launch_flow(Task* task, uint32_t flow) {
  const FlowSpec& f = task->spec.flows[flow];
  sg4::Host* src = port_host[static_cast<size_t>(f.src_gpu)][f.channel];
  sg4::Host* dst = port_host[static_cast<size_t>(f.dst_gpu)][f.channel];
  ++flows;
  sg4::Actor::create("f", src, [this, task, flow, src, dst]() {
    const FlowSpec& fs = task->spec.flows[flow];
    bool failed = false;
    try {
      if (fs.delay_s > 0) sg4::this_actor::sleep_for(fs.delay_s);
      sg4::Comm::sendto(src, dst, static_cast<uint64_t>(fs.bytes + 0.5));
    } catch (const simgrid::NetworkFailureException&) {
      failed = true;
    } catch (const simgrid::HostFailureException&) {
      failed = true;
    }
    guarded([&] { flow_done(task, flow, failed); });
  });
}

void FlowBackend::Impl::flow_done(Task* task, uint32_t flow, bool failed) {
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
  tasks[id].reset();
  listener.on_comm_done(id, f, 0.0);  // callers run it guarded
}

FlowBackend::FlowBackend(CompletionListener& listener, const NetworkPaths& paths, std::vector<int64_t> slot_gpu,
                         const SimOptions& options)
    : impl_(std::make_unique<Impl>(listener, paths, std::move(slot_gpu), options)) {}

FlowBackend::~FlowBackend() = default;

double FlowBackend::now() const { return sg4::Engine::get_clock(); }

int64_t FlowBackend::flows_started() const { return impl_->flows; }

void FlowBackend::start_compute(int32_t slot, double seconds) {
  sg4::Host* h = impl_->gpu_host[static_cast<size_t>(impl_->slot_gpu[static_cast<size_t>(slot)])];
  Impl* impl = impl_.get();
  sg4::Actor::create("c", h, [impl, slot, seconds]() {
    if (seconds > 0) sg4::this_actor::execute(seconds * kSpeed);
    impl->guarded([&] { impl->listener.on_compute_done(slot); });
  });
}

void FlowBackend::set_comm_active(int32_t slot, bool active) {
  if (impl_->options.device.nccl_compute_slowdown == 0) return;
  impl_->gpu_host[static_cast<size_t>(impl_->slot_gpu[static_cast<size_t>(slot)])]->set_pstate(active ? 1 : 0);
}

void FlowBackend::start_comm(uint32_t comm_id, CommTask task) {
  if (impl_->tasks.size() <= comm_id) impl_->tasks.resize(comm_id + 1);
  auto t = std::make_unique<Impl::Task>();
  t->comm_id = comm_id;
  t->spec = std::move(task);
  Impl::Task* raw = t.get();
  impl_->tasks[comm_id] = std::move(t);
  if (raw->spec.closed_form_s >= 0) {
    const double d = raw->spec.closed_form_s;
    Impl* impl = impl_.get();
    sg4::Actor::create("t", impl_->gpu_host[0], [impl, comm_id, d]() {
      if (d > 0) sg4::this_actor::sleep_for(d);
      impl->tasks[comm_id].reset();
      impl->guarded([&] { impl->listener.on_comm_done(comm_id, false, 0.0); });
    });
    return;
  }
  bool has_deps = false;
  for (const auto& f : raw->spec.flows) has_deps = has_deps || f.after >= 0;
  if (has_deps) {
    raw->dependents.resize(raw->spec.flows.size());
    for (uint32_t i = 0; i < raw->spec.flows.size(); ++i)
      if (raw->spec.flows[i].after >= 0) raw->dependents[static_cast<size_t>(raw->spec.flows[i].after)].push_back(i);
  }
  impl_->launch_phase(raw);
}

void FlowBackend::run(const std::function<void()>& start) {
  static int argc = 0;
  static std::vector<std::string> args = {"twinscale-sim",
                                          "--cfg=network/model:CM02",
                                          "--cfg=network/crosstraffic:0",
                                          "--cfg=network/TCP-gamma:1e18",
                                          "--cfg=contexts/stack-size:64",
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
  sg4::Actor::create("start", impl_->gpu_host[0], [impl, &start]() { impl->guarded(start); });
  engine->run();
  if (impl_->error) std::rethrow_exception(impl_->error);
}

} // namespace twinscale::sim::detail
