#include "sim/detail/network_paths.hpp"

#include <algorithm>
#include <limits>

#include "schedules/error.hpp"
#include "sim/detail/degradation_windows.hpp"

namespace twinscale::sim::detail {

void key_phase(const std::vector<PhaseTransfer>& transfers, std::vector<int64_t>& key) {
  key.clear();
  key.push_back(static_cast<int64_t>(transfers.size()));
  for (const auto& t : transfers) {
    key.push_back((static_cast<int64_t>(t.src) << 32) | static_cast<uint32_t>(t.dst));
    key.push_back(t.channel);
  }
}

void key_group(const std::vector<int64_t>& group, std::vector<int64_t>& key) {
  key.push_back(static_cast<int64_t>(group.size()));
  key.insert(key.end(), group.begin(), group.end());
}

using topology::Hop;
using topology::LinkKind;

NetworkPaths::NetworkPaths(const topology::Fabric& fabric, uint64_t seed, topology::EcmpPolicy policy,
                           double nvlink_efficiency, double network_efficiency, bool pxn)
    : fabric_(fabric), shape_(fabric.shape()), seed_(seed), policy_(policy), pxn_(pxn),
      tables_(std::make_shared<LinkTables>()) {
  const auto& links = fabric_.links();
  tables_->link_bw.resize(links.size());
  for (size_t i = 0; i < links.size(); ++i) {
    const auto& l = links[i];
    double eff = 1.0;
    if (l.kind == LinkKind::NvLink)
      eff = nvlink_efficiency;
    else if (l.kind != LinkKind::Pcie)
      eff = network_efficiency;
    tables_->link_bw[i] = l.bw_bytes_per_s * eff;
  }
  tables_->nominal_bw = tables_->link_bw;
  const auto& vertices = fabric_.vertices();
  const double sw = fabric_.spec().switch_spec.latency_s;
  auto is_switch = [&](uint32_t v) {
    const auto k = vertices[v].kind;
    return k == topology::VertexKind::Tor || k == topology::VertexKind::Aggregation || k == topology::VertexKind::Spine;
  };
  tables_->lat_up.resize(links.size());
  tables_->lat_down.resize(links.size());
  for (size_t i = 0; i < links.size(); ++i) {
    tables_->lat_up[i] = links[i].latency_s + (is_switch(links[i].b) ? sw : 0.0);
    tables_->lat_down[i] = links[i].latency_s + (is_switch(links[i].a) ? sw : 0.0);
  }
  load_.assign(2 * links.size(), 0);
  const auto& shape = fabric_.shape();
  tables_->proxy_local.assign(static_cast<size_t>(std::max<int64_t>(1, shape.rails)), -1);
  for (int64_t l = 0; l < shape.gpus_per_server && l < fabric_.gpus(); ++l) {
    auto& slot = tables_->proxy_local[static_cast<size_t>(fabric_.rail_of_gpu(l))];
    if (slot < 0) slot = l;
  }
}

NetworkPaths::NetworkPaths(const NetworkPaths& other, OwnScratch)
    : fabric_(other.fabric_), shape_(other.shape_), seed_(other.seed_), policy_(other.policy_), pxn_(other.pxn_),
      tables_(other.tables_), degraded_(other.degraded_), windows_(other.windows_), load_(other.load_.size(), 0) {}

void NetworkPaths::degrade_link(uint32_t link, double factor) {
  TWINSCALE_ASSERT(link < tables_->link_bw.size() && factor > 0 && factor <= 1, "degrade_link: bad link or factor");
  TWINSCALE_ASSERT(tables_.use_count() == 1, "NetworkPaths: link figures changed after a copy was made");
  tables_->link_bw[link] = tables_->nominal_bw[link] * factor;
  degraded_ = true;
  routes_ = &own_routes_; // a shared memo holds nominal rates
  own_routes_.clear();    // rates change
}

void NetworkPaths::share_routes(RouteMemo& memo) {
  if (degraded_ || windows_) return;
  const bool same = memo.fabric == &fabric_ && memo.links == fabric_.links().size() && memo.gpus == fabric_.gpus() &&
                    memo.seed == seed_ && memo.policy == policy_ && memo.pxn == pxn_ &&
                    memo.link_bw == tables_->link_bw;
  if (!same) {
    memo.clear();
    memo.fabric = &fabric_;
    memo.links = fabric_.links().size();
    memo.gpus = fabric_.gpus();
    memo.seed = seed_;
    memo.policy = policy_;
    memo.pxn = pxn_;
    memo.link_bw = tables_->link_bw;
  }
  routes_ = &memo;
}

int64_t NetworkPaths::pxn_proxy(int64_t src, int64_t dst) const {
  if (!pxn_ || src == dst) return src;
  const topology::ClosShape& shape = shape_;
  if (src < 0 || src >= shape.gpus || dst < 0 || dst >= shape.gpus) { // the fabric's error names the GPU
    fabric_.server_of_gpu(src);
    fabric_.server_of_gpu(dst);
  }
  const int64_t server = shape.server_of(src);
  if (server == shape.server_of(dst)) return src;
  const int64_t rail = shape.rail_of(dst);
  if (rail == shape.rail_of(src)) return src;
  const int64_t local = tables_->proxy_local[static_cast<size_t>(rail)];
  return local < 0 ? src : server * shape.gpus_per_server + local;
}

void NetworkPaths::route(int64_t src, int64_t dst, uint32_t channel, std::vector<Hop>& out) const {
  out.clear();
  const int64_t proxy = pxn_proxy(src, dst);
  if (proxy != src) {
    fabric_.route(src, proxy, channel, seed_, policy_, out);
    fabric_.route(proxy, dst, channel, seed_, policy_, relay_hops_);
    out.insert(out.end(), relay_hops_.begin(), relay_hops_.end());
    return;
  }
  fabric_.route(src, dst, channel, seed_, policy_, out);
}

double NetworkPaths::path_latency_s(int64_t src, int64_t dst, uint32_t channel) const {
  route(src, dst, channel, hops_);
  double lat = 0;
  for (const Hop& h : hops_) lat += hop_latency_s(h.link, h.up);
  return lat;
}

size_t RouteKeyHash::operator()(const std::vector<int64_t>& k) const {
  uint64_t h = 1469598103934665603ull; // FNV-1a over the words
  for (int64_t w : k) h = (h ^ static_cast<uint64_t>(w)) * 1099511628211ull;
  return static_cast<size_t>(h);
}

void NetworkPaths::route_flows(const std::vector<PhaseTransfer>& transfers,
                               const std::vector<std::vector<int64_t>>& gpu_groups, std::vector<FlowCost>& out) const {
  std::vector<Hop>& all_hops = flow_hops_; // reused: no growth from empty per call
  std::vector<FlowPath>& paths = flow_paths_;
  all_hops.clear();
  paths.clear();
  for (size_t gi = 0; gi < gpu_groups.size(); ++gi) {
    const auto& gpus = gpu_groups[gi];
    for (const auto& t : transfers) {
      const int64_t s = gpus[static_cast<size_t>(t.src)], d = gpus[static_cast<size_t>(t.dst)];
      if (s == d) continue;
      route(s, d, t.channel, hops_);
      FlowPath fp{all_hops.size(), 0, 0, gi == 0};
      for (const Hop& h : hops_) {
        all_hops.push_back(h);
        fp.latency += hop_latency_s(h.link, h.up);
        const uint32_t key = 2 * h.link + (h.up ? 0 : 1);
        if (load_[key]++ == 0) touched_.push_back(key);
      }
      fp.hop_end = all_hops.size();
      paths.push_back(fp);
    }
  }
  out.clear();
  out.reserve(paths.size());
  for (const auto& f : paths) {
    double rate = std::numeric_limits<double>::infinity();
    const std::vector<double>& bw = f.own ? tables_->link_bw : tables_->nominal_bw;
    for (size_t i = f.hop_begin; i < f.hop_end; ++i) {
      const Hop& h = all_hops[i];
      rate = std::min(rate, bw[h.link] / load_[2 * h.link + (h.up ? 0 : 1)]);
    }
    out.push_back({f.latency, rate});
  }
  for (uint32_t key : touched_) load_[key] = 0;
  touched_.clear();
}

const std::vector<NetworkPaths::FlowCost>& NetworkPaths::lowest_rate_by_latency(std::vector<FlowCost>& flows) const {
  // Of the flows of one latency only the lowest rate can be kept (the others' rates are
  // not below it), so with few distinct latencies (the symmetric images of a group repeat
  // a handful) each latency's lowest rate is found in a short sorted list instead of
  // sorting every flow; past 64 latencies, the sort of all of them.
  std::vector<FlowCost>& out = by_latency_;
  out.clear();
  for (const FlowCost& f : flows) {
    const auto it = std::lower_bound(out.begin(), out.end(), f.latency,
                                     [](const FlowCost& a, double latency) { return a.latency > latency; });
    if (it != out.end() && it->latency == f.latency) {
      it->rate = std::min(it->rate, f.rate);
      continue;
    }
    if (out.size() == 64) {
      std::sort(flows.begin(), flows.end(), [](const FlowCost& a, const FlowCost& b) {
        return a.latency != b.latency ? a.latency > b.latency : a.rate < b.rate;
      });
      return flows;
    }
    out.insert(it, f);
  }
  return out;
}

const std::vector<NetworkPaths::FlowCost>&
NetworkPaths::phase_flows(const std::vector<PhaseTransfer>& transfers,
                          const std::vector<std::vector<int64_t>>& gpu_groups) const {
  key_phase(transfers, key_);
  // Without degradations every flow's rate and latency depend on the set of groups
  // only (loads are counts over all of them, rates a min over each path, latencies a sum
  // along it), so the groups go in sorted order: a group's symmetric images share the
  // entry. With a degraded link the first group's flows see it and the others' do not.
  group_order_.resize(gpu_groups.size());
  for (size_t i = 0; i < gpu_groups.size(); ++i) group_order_[i] = static_cast<uint32_t>(i);
  if (!degraded_)
    std::sort(group_order_.begin(), group_order_.end(),
              [&](uint32_t a, uint32_t b) { return gpu_groups[a] < gpu_groups[b]; });
  for (uint32_t i : group_order_) key_group(gpu_groups[i], key_);
  if (auto it = routes_->flows.find(key_); it != routes_->flows.end()) return it->second;
  std::vector<FlowCost> flows;
  route_flows(transfers, gpu_groups, flows);
  // keep the flows no other dominates: by latency down, rate up, each whose rate is
  // below every rate kept so far
  const std::vector<FlowCost>& candidates = lowest_rate_by_latency(flows);
  std::vector<FlowCost> front;
  double lowest = std::numeric_limits<double>::infinity();
  for (const auto& f : candidates)
    if (front.empty() || f.rate < lowest) {
      front.push_back(f);
      lowest = std::min(lowest, f.rate);
    }
  const size_t value_words = 2 * front.size();
  constexpr size_t kMaxWords = size_t{32} << 20; // 256 MiB of keys and flows
  return insert_bounded(routes_->flows, routes_->words, kMaxWords, key_, std::move(front), value_words);
}

double NetworkPaths::closed_form_s(const CollectivePlan& plan, const std::vector<std::vector<int64_t>>& gpu_groups,
                                   bool with_latency, bool reuse_routes) const {
  // symmetric images (several groups) share their routed flows unless a link is degraded
  const bool cached = reuse_routes || (gpu_groups.size() > 1 && !degraded_) || routes_ != &own_routes_;
  double total = 0;
  for (const auto& phase : plan.phases) {
    const double bytes = phase.bytes_per_step;
    double phase_s = 0;
    if (!cached) route_flows(phase.transfers, gpu_groups, scratch_flows_);
    for (const auto& f : cached ? phase_flows(phase.transfers, gpu_groups) : scratch_flows_) {
      const double lat =
          with_latency ? std::max(phase.nccl_latency_s, static_cast<double>(phase.latency_steps) * f.latency) : 0.0;
      const double t = lat + (bytes > 0 ? static_cast<double>(phase.steps) * bytes / f.rate : 0.0);
      phase_s = std::max(phase_s, t);
    }
    total += phase_s;
  }
  return total;
}

bool NetworkPaths::crosses_degraded(const CollectivePlan& plan, const std::vector<int64_t>& gpus) const {
  if (!degraded_ && !windows_) return false;
  for (const auto& phase : plan.phases)
    for (const auto& t : phase.transfers) {
      const int64_t s = gpus[static_cast<size_t>(t.src)], d = gpus[static_cast<size_t>(t.dst)];
      if (s == d) continue;
      route(s, d, t.channel, hops_);
      for (const Hop& h : hops_)
        if (tables_->link_bw[h.link] != tables_->nominal_bw[h.link] || (windows_ && windows_->windowed(h.link)))
          return true;
    }
  return false;
}

double NetworkPaths::p2p_s(int64_t src, int64_t dst, double bytes, int channels) const {
  return closed_form_s(p2p_plan(bytes, channels), {{src, dst}});
}

} // namespace twinscale::sim::detail
