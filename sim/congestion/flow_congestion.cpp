#include "sim/congestion/flow_congestion.hpp"

#include <algorithm>

namespace twinscale::sim::congestion {

namespace {

double nic_line_rate(const detail::NetworkPaths& paths) {
  const auto& links = paths.fabric().links();
  for (size_t i = 0; i < links.size(); ++i)
    if (links[i].kind == topology::LinkKind::NicToTor) return paths.link_bw(static_cast<uint32_t>(i));
  return 1; // no network link: the table is never asked
}

} // namespace

FlowCongestion::FlowCongestion(const detail::NetworkPaths& paths, const topology::NetworkCcSpec& spec)
    : paths_(paths), table_(spec, nic_line_rate(paths)) {
  const auto& links = paths.fabric().links();
  active_.assign(2 * links.size(), 0);
  network_.resize(links.size());
  for (size_t i = 0; i < links.size(); ++i)
    network_[i] = links[i].kind != topology::LinkKind::NvLink && links[i].kind != topology::LinkKind::Pcie;
}

double FlowCongestion::on_start(int64_t src_gpu, int64_t dst_gpu, uint32_t channel, double bytes) {
  paths_.route(src_gpu, dst_gpu, channel, hops_);
  int32_t most = 0;
  for (const topology::Hop& h : hops_) {
    if (!network_[h.link]) continue;
    most = std::max(most, ++active_[2 * h.link + (h.up ? 0 : 1)]);
  }
  const double factor = table_.byte_factor(most, bytes);
  if (factor > 1) {
    ++penalised_;
    extra_bytes_ += (factor - 1) * bytes;
  }
  return bytes * factor;
}

void FlowCongestion::on_end(int64_t src_gpu, int64_t dst_gpu, uint32_t channel) {
  paths_.route(src_gpu, dst_gpu, channel, hops_);
  for (const topology::Hop& h : hops_)
    if (network_[h.link]) --active_[2 * h.link + (h.up ? 0 : 1)];
}

} // namespace twinscale::sim::congestion
