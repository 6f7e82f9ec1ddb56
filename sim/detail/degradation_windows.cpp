#include "sim/detail/degradation_windows.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "schedules/error.hpp"
#include "sim/detail/network_paths.hpp"

namespace twinscale::sim::detail {

using topology::Hop;

DegradationWindows::DegradationWindows(const NetworkPaths& paths, std::vector<DegradationWindow> windows)
    : paths_(paths), windows_(std::move(windows)) {
  const size_t links = paths_.fabric().links().size();
  epoch_start_.push_back(-std::numeric_limits<double>::infinity());
  for (const auto& w : windows_) {
    TWINSCALE_ASSERT(w.link < links && w.factor > 0 && w.factor <= 1 && w.until_s > w.at_s,
                     "degradation window: bad link, factor or times");
    epoch_start_.push_back(w.at_s);
    if (std::isfinite(w.until_s)) epoch_start_.push_back(w.until_s);
  }
  std::sort(epoch_start_.begin(), epoch_start_.end());
  epoch_start_.erase(std::unique(epoch_start_.begin(), epoch_start_.end()), epoch_start_.end());
  link_slot_.assign(links, -1);
  for (const auto& w : windows_) {
    int32_t& slot = link_slot_[w.link];
    if (slot < 0) {
      slot = static_cast<int32_t>(factors_.size());
      factors_.emplace_back(epoch_start_.size(), 1.0);
    }
    // epoch edges include the window's, so an epoch lies wholly inside or outside it
    for (size_t k = 0; k < epoch_start_.size(); ++k)
      if (epoch_start_[k] >= w.at_s && epoch_start_[k] < w.until_s) factors_[static_cast<size_t>(slot)][k] = w.factor;
  }
  load_.assign(2 * links, 0);
}

size_t DegradationWindows::epoch_of(double t) const {
  // the last epoch starting at or before t (epoch 0 starts at −∞)
  return static_cast<size_t>(std::upper_bound(epoch_start_.begin(), epoch_start_.end(), t) - epoch_start_.begin()) - 1;
}

double DegradationWindows::factor(uint32_t link, double t) const {
  if (link >= link_slot_.size() || link_slot_[link] < 0) return 1.0;
  return factors_[static_cast<size_t>(link_slot_[link])][epoch_of(t)];
}

size_t DegradationWindows::KeyHash::operator()(const std::vector<int64_t>& k) const {
  uint64_t h = 1469598103934665603ull; // FNV-1a over the words
  for (int64_t w : k) h = (h ^ static_cast<uint64_t>(w)) * 1099511628211ull;
  return static_cast<size_t>(h);
}

DegradationWindows::Flows DegradationWindows::route_flows(const std::vector<PhaseTransfer>& transfers,
                                                          const std::vector<std::vector<int64_t>>& gpu_groups) const {
  struct FlowPath {
    size_t hop_begin, hop_end;
    double latency;
    bool own; // a flow of the first group: windows apply
  };
  std::vector<Hop> all_hops, hops;
  std::vector<FlowPath> paths;
  for (size_t gi = 0; gi < gpu_groups.size(); ++gi) {
    const auto& gpus = gpu_groups[gi];
    for (const auto& t : transfers) {
      const int64_t s = gpus[static_cast<size_t>(t.src)], d = gpus[static_cast<size_t>(t.dst)];
      if (s == d) continue;
      paths_.route(s, d, t.channel, hops);
      FlowPath fp{all_hops.size(), 0, 0, gi == 0};
      for (const Hop& h : hops) {
        all_hops.push_back(h);
        fp.latency += paths_.hop_latency_s(h.link, h.up);
        const uint32_t key = 2 * h.link + (h.up ? 0 : 1);
        if (load_[key]++ == 0) touched_.push_back(key);
      }
      fp.hop_end = all_hops.size();
      paths.push_back(fp);
    }
  }
  const size_t epochs = epoch_start_.size();
  std::vector<double> rate(paths.size() * epochs, std::numeric_limits<double>::infinity());
  for (size_t fi = 0; fi < paths.size(); ++fi) {
    const FlowPath& f = paths[fi];
    double* r = &rate[fi * epochs];
    for (size_t i = f.hop_begin; i < f.hop_end; ++i) {
      const Hop& h = all_hops[i];
      const double load = load_[2 * h.link + (h.up ? 0 : 1)];
      const double bw = f.own ? paths_.link_bw(h.link) : paths_.nominal_link_bw(h.link);
      const int32_t slot = f.own ? link_slot_[h.link] : -1;
      for (size_t k = 0; k < epochs; ++k) {
        const double factor = slot < 0 ? 1.0 : factors_[static_cast<size_t>(slot)][k];
        r[k] = std::min(r[k], bw * factor / load);
      }
    }
  }
  // flows equal to another (latency and every epoch's rate) change nothing in a phase's max
  std::vector<size_t> order(paths.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto row = [&](size_t i) { return rate.begin() + static_cast<std::ptrdiff_t>(i * epochs); };
  auto less = [&](size_t a, size_t b) {
    if (paths[a].latency != paths[b].latency) return paths[a].latency < paths[b].latency;
    return std::lexicographical_compare(row(a), row(a) + static_cast<std::ptrdiff_t>(epochs), row(b),
                                        row(b) + static_cast<std::ptrdiff_t>(epochs));
  };
  std::sort(order.begin(), order.end(), less);
  Flows out;
  for (size_t j = 0; j < order.size(); ++j) {
    if (j > 0 && !less(order[j - 1], order[j])) continue; // equal to the previous one
    out.latency.push_back(paths[order[j]].latency);
    out.rate.insert(out.rate.end(), row(order[j]), row(order[j]) + static_cast<std::ptrdiff_t>(epochs));
  }
  for (uint32_t key : touched_) load_[key] = 0;
  touched_.clear();
  return out;
}

const DegradationWindows::Flows&
DegradationWindows::phase_flows(const std::vector<PhaseTransfer>& transfers,
                                const std::vector<std::vector<int64_t>>& gpu_groups) const {
  key_phase(transfers, key_);
  for (const auto& g : gpu_groups) key_group(g, key_);
  if (auto it = cache_.find(key_); it != cache_.end()) return it->second;
  Flows flows = route_flows(transfers, gpu_groups);
  const size_t value_words = flows.latency.size() + flows.rate.size();
  constexpr size_t kMaxWords = size_t{16} << 20; // 128 MiB of keys and flows
  return insert_bounded(cache_, cache_words_, kMaxWords, key_, std::move(flows), value_words);
}

double DegradationWindows::transfer_s(const double* rate, double t, double work) const {
  size_t k = epoch_of(t);
  double elapsed = 0;
  for (;;) {
    const double end = k + 1 < epoch_start_.size() ? epoch_start_[k + 1] : std::numeric_limits<double>::infinity();
    const double room = end - (t + elapsed); // seconds left in epoch k
    if (work <= room * rate[k]) return elapsed + work / rate[k];
    work -= room * rate[k];
    elapsed = end - t;
    ++k;
  }
}

double DegradationWindows::closed_form_s(const CollectivePlan& plan,
                                         const std::vector<std::vector<int64_t>>& gpu_groups, double start_s,
                                         bool with_latency) const {
  const size_t epochs = epoch_start_.size();
  double total = 0;
  for (const auto& phase : plan.phases) {
    const double t = start_s + total;
    const double work = static_cast<double>(phase.steps) * phase.bytes_per_step;
    const Flows& flows = phase_flows(phase.transfers, gpu_groups);
    double phase_s = 0;
    for (size_t f = 0; f < flows.latency.size(); ++f) {
      const double lat =
          with_latency ? std::max(phase.nccl_latency_s, static_cast<double>(phase.latency_steps) * flows.latency[f])
                       : 0.0;
      const double move = phase.bytes_per_step > 0 ? transfer_s(&flows.rate[f * epochs], t + lat, work) : 0.0;
      phase_s = std::max(phase_s, lat + move);
    }
    total += phase_s;
  }
  return total;
}

double DegradationWindows::p2p_s(int64_t src, int64_t dst, double bytes, int channels, double start_s) const {
  return closed_form_s(p2p_plan(bytes, channels), {{src, dst}}, start_s);
}

std::vector<double> DegradationWindows::flow_set(const CollectivePlan& plan,
                                                 const std::vector<std::vector<int64_t>>& gpu_groups) const {
  std::vector<double> out;
  for (const auto& phase : plan.phases) {
    const Flows& flows = phase_flows(phase.transfers, gpu_groups);
    out.push_back(static_cast<double>(flows.latency.size()));
    out.insert(out.end(), flows.latency.begin(), flows.latency.end());
    out.insert(out.end(), flows.rate.begin(), flows.rate.end());
  }
  return out;
}

} // namespace twinscale::sim::detail
