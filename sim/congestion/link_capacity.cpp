#include "sim/congestion/link_capacity.hpp"

#include <simgrid/s4u/Link.hpp>

#include <utility>

#include "sim/congestion/flow_congestion.hpp"

namespace twinscale::sim::congestion {

LinkCapacity::LinkCapacity(std::vector<simgrid::s4u::Link*> dirs) : dirs_(std::move(dirs)) {}

std::unique_ptr<LinkCapacity> LinkCapacity::attach(FlowCongestion& cc, const std::vector<simgrid::s4u::Link*>& up,
                                                   const std::vector<simgrid::s4u::Link*>& down) {
  std::vector<simgrid::s4u::Link*> dirs(2 * up.size());
  for (size_t i = 0; i < up.size(); ++i) {
    dirs[2 * i] = up[i];
    dirs[2 * i + 1] = down.at(i);
  }
  auto lc = std::make_unique<LinkCapacity>(std::move(dirs));
  LinkCapacity* raw = lc.get();
  cc.set_capacity_setter([raw](uint32_t dir, double bw) { raw->set(dir, bw); });
  return lc;
}

void LinkCapacity::set(uint32_t dir, double bytes_per_s) {
  if (starting_ > 0) {
    held_.emplace_back(dir, bytes_per_s);
    return;
  }
  dirs_.at(dir)->set_bandwidth(bytes_per_s);
}

void LinkCapacity::started() {
  if (--starting_ > 0) return;
  starting_ = 0;
  for (const auto& [dir, bw] : held_) dirs_.at(dir)->set_bandwidth(bw);
  held_.clear();
}

} // namespace twinscale::sim::congestion
