#include "sim/congestion/fluid_model.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/congestion/dcqcn_equations.hpp"
#include "sim/error.hpp"

namespace twinscale::sim::congestion {

using topology::CongestionControl;

struct FluidModel::FlowState {
  bool started = false;
  bool done = false;
  double to_send = 0;   // bytes not yet injected (infinite flows: large)
  double delivered = 0; // bytes that reached the receiver
  double delivered_at_sample = 0;
  double delivered_before = 0;        // at the previous step
  double rate = 0;                    // sending rate, bytes/s
  std::vector<double> q;              // backlog per hop of the path
  std::vector<double> arrive;         // bytes reaching each hop in this step
  std::vector<double> p_hist, d_hist; // feedback delay lines (marking, queueing delay)
  size_t hist_at = 0;
  // DCQCN
  double rc = 0, rt = 0, alpha = 1, quiet_s = 0; // quiet_s: hyper increase (dcqcn_hyper)
  // Swift / hybrid
  double cwnd = 0, last_decrease_s = -1, ecn_alpha = 1; // α starts at 1 as DCQCN's
};

double FluidModel::marking_probability(const topology::DcqcnSpec& d, double bytes) {
  if (bytes <= d.kmin_bytes) return 0;
  if (bytes >= d.kmax_bytes) return 1;
  return d.pmax * (bytes - d.kmin_bytes) / (d.kmax_bytes - d.kmin_bytes);
}

FluidModel::FluidModel(topology::NetworkCcSpec spec, std::vector<FluidPort> ports, std::vector<FluidFlow> flows,
                       FluidOptions options)
    : spec_(std::move(spec)), ports_(std::move(ports)), flows_(std::move(flows)), options_(options) {
  if (!(options_.dt_s > 0) || !(options_.end_s > 0) || !(options_.sample_every_s >= options_.dt_s))
    throw SimError("fluid model: dt_s and end_s must be > 0 and sample_every_s ≥ dt_s");
  for (size_t i = 0; i < ports_.size(); ++i)
    if (!(ports_[i].capacity_bytes_per_s > 0))
      throw SimError("fluid model: port " + std::to_string(i) + " needs a capacity > 0 bytes/s");
  for (size_t f = 0; f < flows_.size(); ++f) {
    if (flows_[f].path.empty()) throw SimError("fluid model: flow " + std::to_string(f) + " has an empty path");
    for (uint32_t p : flows_[f].path)
      if (p >= ports_.size())
        throw SimError("fluid model: flow " + std::to_string(f) + " crosses port " + std::to_string(p) + " of " +
                       std::to_string(ports_.size()));
  }
  order_ports();
}

/// Ports in an order where every port comes after the ports that feed it on some flow's
/// path (Kahn's algorithm). Up-down routing in a Clos has no cycle; a set of paths that
/// does is refused.
void FluidModel::order_ports() {
  const size_t np = ports_.size();
  std::vector<std::vector<uint32_t>> next(np);
  std::vector<int32_t> indegree(np, 0);
  for (const auto& f : flows_)
    for (size_t h = 0; h + 1 < f.path.size(); ++h) {
      next[f.path[h]].push_back(f.path[h + 1]);
      ++indegree[f.path[h + 1]];
    }
  std::vector<uint32_t> ready;
  for (size_t i = np; i-- > 0;)
    if (indegree[i] == 0) ready.push_back(static_cast<uint32_t>(i));
  while (!ready.empty()) {
    const uint32_t i = ready.back();
    ready.pop_back();
    port_order_.push_back(i);
    for (uint32_t j : next[i])
      if (--indegree[j] == 0) ready.push_back(j);
  }
  if (port_order_.size() != np)
    throw SimError("fluid model: the flows' paths make a cycle of ports (a routing loop); paths must be loop-free");
}

/// Swift's target delay (Kumar et al. §3.1, §3.3): base + hop scaling + flow scaling,
/// flow scaling = clamp(α/√cwnd + β, 0, fs_range) with α, β such that it is fs_range at
/// fs_min_cwnd and 0 at fs_max_cwnd (cwnd in packets).
double FluidModel::swift_target_s(const FlowState& f, int32_t hops) const {
  const auto& s = spec_.swift;
  const double a = s.fs_range_s / (1 / std::sqrt(s.fs_min_cwnd_packets) - 1 / std::sqrt(s.fs_max_cwnd_packets));
  const double b = -a / std::sqrt(s.fs_max_cwnd_packets);
  const double cwnd_pk = std::max(f.cwnd / spec_.mtu_bytes, 1e-9);
  const double fs = std::clamp(a / std::sqrt(cwnd_pk) + b, 0.0, s.fs_range_s);
  return s.base_target_s + s.hop_scale_s * hops + fs;
}

/// One step of the flow's controller from the signals it sees now (already delayed).
void FluidModel::control(FlowState& f, const FluidFlow& spec, double now, double p, double qdelay_s,
                         double line_rate) const {
  const double dt = options_.dt_s;
  const double mtu = spec_.mtu_bytes;
  switch (spec_.congestion_control) {
  case CongestionControl::None: f.rate = line_rate; return;
  case CongestionControl::Dcqcn: {
    const DcqcnDerivatives d = dcqcn_derivatives(spec_.dcqcn, mtu, f.rc, f.rt, f.alpha, p);
    const DcqcnHyper h = dcqcn_hyper(spec_.dcqcn, mtu, f.rc, f.quiet_s, p);
    f.rc = std::clamp(f.rc + d.drc * dt, spec_.dcqcn.min_rate_bytes_per_s, line_rate);
    f.rt = std::clamp(f.rt + (d.drt + h.drt) * dt, spec_.dcqcn.min_rate_bytes_per_s, line_rate);
    f.quiet_s = std::max(0.0, f.quiet_s + h.dquiet * dt);
    f.alpha = std::clamp(f.alpha + d.dalpha * dt, 0.0, 1.0);
    f.rate = f.rc;
    return;
  }
  case CongestionControl::Swift:
  case CongestionControl::Hybrid: break;
  }
  const auto& s = spec_.swift;
  const double rtt = options_.base_rtt_s + qdelay_s;
  const double target = swift_target_s(f, spec.hops);
  const bool hybrid = spec_.congestion_control == CongestionControl::Hybrid;
  double factor = 1;
  if (rtt >= target) factor = 1 - s.beta * (rtt - target) / rtt;
  if (factor < 1) {
    if (now - f.last_decrease_s >= rtt) { // at most one decrease per RTT
      f.cwnd *= std::max(factor, 1 - s.max_mdf);
      f.last_decrease_s = now;
    }
  } else {
    f.cwnd += s.ai_packets * mtu * dt / rtt; // +ai packets per RTT
  }
  if (hybrid && p > 0) {
    // DCQCN's ECN response on the window (docs/congestion.md): α as DCQCN's, and the
    // expected cut α/2 per CNP interval τ with a CNP in it, 1 − (1 − p)^(τ·rate).
    const auto& d = spec_.dcqcn;
    const double rate = std::min(line_rate, f.cwnd / rtt);
    const double a_alpha = 1 - std::pow(1 - p, d.tau_alpha_s * rate / mtu);
    const double a = 1 - std::pow(1 - p, d.tau_s * rate / mtu);
    f.ecn_alpha += d.g / d.tau_alpha_s * (a_alpha - f.ecn_alpha) * dt;
    f.cwnd *= 1 - spec_.hybrid.ecn_weight * f.ecn_alpha * a / (2 * d.tau_s) * dt;
  } else if (hybrid) {
    f.ecn_alpha -= spec_.dcqcn.g / spec_.dcqcn.tau_alpha_s * f.ecn_alpha * dt;
  }
  const double max_cwnd = line_rate * (options_.base_rtt_s + target);
  f.cwnd = std::clamp(f.cwnd, 1e-3 * mtu, max_cwnd);
  f.rate = std::min(line_rate, f.cwnd / rtt);
}

/// The state of one run: per flow, per port, the result being filled.
struct FluidModel::Run {
  std::vector<FlowState> flows;
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> members; // per port: (flow, hop)
  std::vector<double> factor, backlog, mark, ingress;              // per port
  std::vector<size_t> next_change;                                 // per port
  std::vector<uint8_t> paused;                                     // per port
  size_t delay_steps = 1;
  double last_sample = 0;
  FluidResult result;
};

FluidResult FluidModel::run() {
  const double dt = options_.dt_s;
  const size_t nf = flows_.size(), np = ports_.size();
  Run r;
  r.delay_steps = std::max<size_t>(1, static_cast<size_t>(std::lround(spec_.feedback_delay_s / dt)));
  r.flows.resize(nf);
  r.members.resize(np);
  for (size_t f = 0; f < nf; ++f) {
    FlowState& s = r.flows[f];
    s.q.assign(flows_[f].path.size(), 0);
    s.arrive.assign(flows_[f].path.size(), 0);
    s.p_hist.assign(r.delay_steps, 0);
    s.d_hist.assign(r.delay_steps, 0);
    s.to_send = flows_[f].bytes > 0 ? flows_[f].bytes : 1e300;
    for (size_t h = 0; h < flows_[f].path.size(); ++h)
      r.members[flows_[f].path[h]].push_back({static_cast<uint32_t>(f), static_cast<uint32_t>(h)});
  }
  r.factor.assign(np, 1);
  r.backlog.assign(np, 0);
  r.mark.assign(np, 0);
  r.ingress.assign(np, 0);
  r.next_change.assign(np, 0);
  r.paused.assign(np, 0);
  r.result.finish_s.assign(nf, -1);
  r.result.delivered_bytes.assign(nf, 0);
  r.result.paused_s.assign(np, 0);
  r.result.max_queue_bytes.assign(np, 0);
  bool any_finite = false;
  for (const auto& f : flows_) any_finite = any_finite || f.bytes > 0;
  const auto steps = static_cast<int64_t>(std::ceil(options_.end_s / dt));
  int64_t k = 0;
  for (; k < steps; ++k) {
    const double t = static_cast<double>(k) * dt;
    control_flows(r, t);
    serve_ports(r);
    update_queues(r);
    const bool all_done = finish_step(r, t) && any_finite;
    if (options_.stop_when_done && all_done) {
      ++k;
      break;
    }
  }
  r.result.end_s = static_cast<double>(k) * dt;
  for (size_t f = 0; f < nf; ++f) r.result.delivered_bytes[f] = r.flows[f].delivered;
  return std::move(r.result);
}

/// Capacity changes due now, marking from the backlogs, then every flow's controller on
/// its delayed signals.
void FluidModel::control_flows(Run& r, double t) const {
  const double dt = options_.dt_s;
  for (size_t i = 0; i < ports_.size(); ++i) {
    auto& ch = ports_[i].capacity_changes;
    while (r.next_change[i] < ch.size() && ch[r.next_change[i]].first <= t + dt / 2)
      r.factor[i] = ch[r.next_change[i]++].second;
    r.mark[i] = ports_[i].marks_ecn ? marking_probability(spec_.dcqcn, r.backlog[i]) : 0;
  }
  for (size_t f = 0; f < flows_.size(); ++f) {
    FlowState& s = r.flows[f];
    const FluidFlow& spec = flows_[f];
    if (s.done) continue;
    const double line = ports_[spec.path[0]].capacity_bytes_per_s;
    if (!s.started) {
      if (t + dt / 2 < spec.start_s) continue;
      s.started = true;
      s.rc = s.rt = line;
      s.alpha = 1;
      s.rate = line;
      const double init = spec_.swift.initial_cwnd_packets * spec_.mtu_bytes;
      s.cwnd = init > 0 ? init : line * options_.base_rtt_s;
    }
    double keep = 1, qd = 0;
    for (uint32_t p : spec.path) {
      keep *= 1 - r.mark[p];
      qd += r.backlog[p] / ports_[p].capacity_bytes_per_s;
    }
    const double p_now = s.p_hist[s.hist_at], d_now = s.d_hist[s.hist_at];
    // Marks reach the sender with the packets that carry them (CNPs, ECN echoes): a
    // flow that delivered nothing in the last step (stalled behind a pause or a flap)
    // gets no congestion notification.
    s.p_hist[s.hist_at] = s.delivered > s.delivered_before ? 1 - keep : 0;
    s.delivered_before = s.delivered;
    s.d_hist[s.hist_at] = qd;
    s.hist_at = (s.hist_at + 1) % r.delay_steps;
    control(s, spec, t, p_now, d_now, line);
  }
}

/// Injection, then service port by port from upstream to downstream, so that what a
/// port forwards in this step can leave the next port in the same step (the backlog is
/// then the standing queue, not one step's worth of transit).
void FluidModel::serve_ports(Run& r) const {
  const double dt = options_.dt_s;
  for (FlowState& s : r.flows) {
    std::fill(s.arrive.begin(), s.arrive.end(), 0.0);
    if (!s.started || s.done) continue;
    const double inject = std::min({s.rate * dt, s.to_send, std::max(0.0, options_.host_queue_bytes - s.q[0])});
    s.arrive[0] = inject;
    s.to_send -= inject;
  }
  for (uint32_t i : port_order_) {
    if (r.paused[i]) {
      for (auto [f, h] : r.members[i]) {
        r.flows[f].q[h] += r.flows[f].arrive[h];
        r.flows[f].arrive[h] = 0;
      }
      continue;
    }
    double avail = 0;
    for (auto [f, h] : r.members[i]) avail += r.flows[f].q[h] + r.flows[f].arrive[h];
    if (avail <= 0) continue;
    const double frac = std::min(ports_[i].capacity_bytes_per_s * r.factor[i] * dt, avail) / avail;
    for (auto [f, h] : r.members[i]) {
      FlowState& s = r.flows[f];
      const double here = s.q[h] + s.arrive[h];
      const double out = here * frac;
      s.q[h] = here - out;
      s.arrive[h] = 0;
      if (h + 1 < s.q.size())
        s.arrive[h + 1] += out;
      else
        s.delivered += out;
    }
  }
}

/// Backlogs and PFC ingress counters, drops (no PFC), pause and resume.
void FluidModel::update_queues(Run& r) const {
  const bool pfc = spec_.pfc.enabled;
  std::fill(r.backlog.begin(), r.backlog.end(), 0);
  std::fill(r.ingress.begin(), r.ingress.end(), 0);
  for (size_t f = 0; f < flows_.size(); ++f) {
    const auto& path = flows_[f].path;
    for (size_t h = 0; h < path.size(); ++h) {
      r.backlog[path[h]] += r.flows[f].q[h];
      if (h + 1 < path.size() && ports_[path[h]].pfc_ingress) r.ingress[path[h]] += r.flows[f].q[h + 1];
    }
  }
  for (size_t i = 0; i < ports_.size(); ++i) {
    if (pfc || !ports_[i].marks_ecn || r.backlog[i] <= spec_.buffer_bytes) continue;
    const double keep = spec_.buffer_bytes / r.backlog[i];
    for (auto [f, h] : r.members[i]) {
      const double drop = r.flows[f].q[h] * (1 - keep);
      r.flows[f].q[h] -= drop;
      r.flows[f].to_send += drop; // sent again
      r.result.dropped_bytes += drop;
    }
    r.backlog[i] = spec_.buffer_bytes;
  }
  for (size_t i = 0; i < ports_.size(); ++i) {
    r.result.max_queue_bytes[i] = std::max(r.result.max_queue_bytes[i], r.backlog[i]);
    if (r.paused[i]) r.result.paused_s[i] += options_.dt_s;
    if (!pfc || !ports_[i].pfc_ingress) continue;
    if (!r.paused[i] && r.ingress[i] > spec_.pfc.xoff_bytes)
      r.paused[i] = 1;
    else if (r.paused[i] && r.ingress[i] < spec_.pfc.xon_bytes)
      r.paused[i] = 0;
  }
}

/// Completions and samples; true when every finite flow is done.
bool FluidModel::finish_step(Run& r, double t) const {
  const double dt = options_.dt_s;
  bool all_done = true;
  for (size_t f = 0; f < flows_.size(); ++f) {
    FlowState& s = r.flows[f];
    if (flows_[f].bytes > 0 && !s.done && s.delivered >= flows_[f].bytes * (1 - 1e-9)) {
      s.done = true;
      s.rate = 0;
      r.result.finish_s[f] = t + dt;
    }
    if (flows_[f].bytes > 0 && !s.done) all_done = false;
  }
  const double t_end = t + dt;
  if (t_end - r.last_sample >= options_.sample_every_s - dt / 2) {
    FluidSample smp;
    smp.t_s = t_end;
    for (FlowState& s : r.flows) {
      smp.rate.push_back(s.started && !s.done ? s.rate : 0);
      smp.throughput.push_back((s.delivered - s.delivered_at_sample) / (t_end - r.last_sample));
      s.delivered_at_sample = s.delivered;
    }
    smp.queue = r.backlog;
    smp.paused = r.paused;
    r.result.samples.push_back(std::move(smp));
    r.last_sample = t_end;
  }
  return all_done;
}

} // namespace twinscale::sim::congestion
