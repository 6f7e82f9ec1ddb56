#include "sim/congestion/flow_congestion.hpp"

#include <algorithm>
#include <utility>

namespace twinscale::sim::congestion {

namespace {

double nic_line_rate(const detail::NetworkPaths& paths) {
  const auto& links = paths.fabric().links();
  for (size_t i = 0; i < links.size(); ++i)
    if (links[i].kind == topology::LinkKind::NicToTor) return paths.link_bw(static_cast<uint32_t>(i));
  return 1; // no network link: the table is never asked
}

} // namespace

FlowCongestion::FlowCongestion(const detail::NetworkPaths& paths, const topology::NetworkCcSpec& spec, SetCapacity set)
    : paths_(paths), table_(spec, nic_line_rate(paths)), equilibrium_(spec), set_(std::move(set)),
      line_rate_(nic_line_rate(paths)) {
  const auto& links = paths.fabric().links();
  active_.assign(2 * links.size(), 0);
  nominal_.resize(2 * links.size());
  network_.resize(links.size());
  for (size_t i = 0; i < links.size(); ++i) {
    network_[i] = links[i].kind != topology::LinkKind::NvLink && links[i].kind != topology::LinkKind::Pcie;
    nominal_[2 * i] = nominal_[2 * i + 1] = paths.link_bw(static_cast<uint32_t>(i));
  }
  cap_ = nominal_;
  ingress_.resize(2 * links.size());
  pausers_.resize(2 * links.size());
}

void FlowCongestion::network_hops(int64_t src_gpu, int64_t dst_gpu, uint32_t channel) {
  paths_.route(src_gpu, dst_gpu, channel, hops_);
  dirs_.clear();
  for (const topology::Hop& h : hops_)
    if (network_[h.link]) dirs_.push_back(2 * h.link + (h.up ? 0 : 1));
}

/// The standing queue's delay at `dir` for the flows there now: a switch port fed from
/// one ingress of equal capacity holds no queue.
double FlowCongestion::queue_s(uint32_t dir) {
  if (ingress_[dir].size() < 2) return 0;
  return equilibrium_.queue_bytes(active_[dir], nominal_[dir]) / nominal_[dir];
}

void FlowCongestion::join(int64_t src_gpu, int64_t dst_gpu, uint32_t channel) {
  network_hops(src_gpu, dst_gpu, channel);
  for (size_t j = 0; j < dirs_.size(); ++j) {
    ++active_[dirs_[j]];
    if (j > 0) add_ingress(dirs_[j], dirs_[j - 1], +1);
  }
  if (equilibrium_.pfc_possible()) {
    bool paused = false;
    for (uint32_t d : dirs_) {
      refresh_pauses(d);
      update_capacity(d); // its own flow count changed
    }
    for (uint32_t d : dirs_) paused = paused || cap_[d] < nominal_[d];
    if (paused) ++stats_.started_paused; // SimGrid keeps its start-time ceiling: link_capacity.hpp
  }
}

double FlowCongestion::start_bytes(int64_t src_gpu, int64_t dst_gpu, uint32_t channel, double bytes) {
  network_hops(src_gpu, dst_gpu, channel);
  int32_t most = 0;
  for (uint32_t d : dirs_) most = std::max(most, active_[d]);
  // The transient, less the standing queue's delay that on_end adds.
  const double credit = most > 1 ? equilibrium_.queue_bytes(CcPenaltyTable::bucket(most), line_rate_) / line_rate_ : 0;
  const double factor = table_.byte_factor(most, bytes, credit);
  if (factor > 1) {
    ++stats_.flows_penalised;
    stats_.extra_bytes += (factor - 1) * bytes;
  }
  return bytes * factor;
}

double FlowCongestion::on_end(int64_t src_gpu, int64_t dst_gpu, uint32_t channel) {
  network_hops(src_gpu, dst_gpu, channel);
  double delay = 0;
  for (size_t j = 1; j < dirs_.size(); ++j) delay += queue_s(dirs_[j]);
  if (delay > 0) {
    ++stats_.flows_queued;
    stats_.queue_delay_s += delay;
  }
  for (size_t j = 0; j < dirs_.size(); ++j) {
    --active_[dirs_[j]];
    if (j > 0) add_ingress(dirs_[j], dirs_[j - 1], -1);
  }
  if (equilibrium_.pfc_possible())
    for (uint32_t d : dirs_) {
      refresh_pauses(d);
      update_capacity(d);
    }
  return delay;
}

void FlowCongestion::add_ingress(uint32_t egress, uint32_t ingress, int32_t delta) {
  auto& in = ingress_[egress];
  auto it = std::find_if(in.begin(), in.end(), [&](const Ingress& i) { return i.dir == ingress; });
  if (it == in.end()) it = in.insert(in.end(), Ingress{ingress, 0});
  it->flows += delta;
  if (it->flows > 0) return;
  in.erase(it);
  set_paused(ingress, egress, false); // no flow of this ingress left at the egress
}

/// PFC at `egress`: which of its ingresses hold more than XOFF of its standing queue.
void FlowCongestion::refresh_pauses(uint32_t egress) {
  const auto& in = ingress_[egress];
  if (in.empty()) return;
  const double q = in.size() < 2 ? 0 : equilibrium_.queue_bytes(active_[egress], nominal_[egress]);
  const double n = active_[egress];
  for (const Ingress& i : in) {
    set_paused(i.dir, egress, q * i.flows / n > equilibrium_.spec().pfc.xoff_bytes);
    update_capacity(i.dir); // the egress's pace C_E / n changed with n
  }
}

void FlowCongestion::set_paused(uint32_t ingress, uint32_t egress, bool paused) {
  auto& p = pausers_[ingress];
  auto it = std::find(p.begin(), p.end(), egress);
  if (paused == (it != p.end())) return;
  if (paused)
    p.push_back(egress);
  else
    p.erase(it);
  update_capacity(ingress);
}

/// A paused port moves at the pace of the slowest egress pausing it, times its flows.
void FlowCongestion::update_capacity(uint32_t dir) {
  double cap = nominal_[dir];
  for (uint32_t e : pausers_[dir])
    if (active_[e] > 0) cap = std::min(cap, active_[dir] * nominal_[e] / active_[e]);
  if (cap == cap_[dir]) return;
  const bool was = cap_[dir] < nominal_[dir], is = cap < nominal_[dir];
  paused_now_ += (is ? 1 : 0) - (was ? 1 : 0);
  stats_.most_paused = std::max(stats_.most_paused, paused_now_);
  cap_[dir] = cap;
  ++stats_.pause_changes;
  if (set_) set_(dir, cap);
}

} // namespace twinscale::sim::congestion
