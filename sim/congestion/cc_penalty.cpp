#include "sim/congestion/cc_penalty.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/congestion/fluid_model.hpp"
#include "sim/congestion/fluid_scenarios.hpp"
#include "sim/error.hpp"

namespace twinscale::sim::congestion {

namespace {

constexpr int kBuckets[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
constexpr int kMinLog2 = 12; // 4 KiB
constexpr int kMaxLog2 = 26; // 64 MiB

} // namespace

int CcPenaltyTable::bucket(int64_t flows) {
  for (int b : kBuckets)
    if (flows <= b) return b;
  return kBuckets[std::size(kBuckets) - 1];
}

CcPenaltyTable::CcPenaltyTable(topology::NetworkCcSpec spec, double line_rate_bytes_per_s)
    : spec_(std::move(spec)), line_rate_(line_rate_bytes_per_s) {
  if (!(line_rate_ > 0)) throw SimError("congestion penalty: line rate must be > 0 bytes/s");
}

double CcPenaltyTable::loss_s(int n, double bytes) const {
  const FluidFabric fab = incast_fabric(n, line_rate_, {}, bytes);
  FluidOptions o;
  o.sample_every_s = 1; // no samples needed
  const double ideal = n * bytes / line_rate_;
  o.end_s = 20 * ideal + 0.05; // a bound: every controller here finishes far sooner
  const FluidResult r = FluidModel(spec_, fab.ports, fab.flows, o).run();
  double last = 0;
  for (double t : r.finish_s) last = std::max(last, t < 0 ? o.end_s : t); // unfinished: the bound
  return std::max(0.0, last - ideal);
}

double CcPenaltyTable::byte_factor(int64_t flows, double bytes, double credit_s) {
  if (spec_.congestion_control == topology::CongestionControl::None || flows <= 1 || !(bytes > 0)) return 1;
  const int n = bucket(flows);
  const int lg = std::clamp(static_cast<int>(std::floor(std::log2(std::max(bytes, 1.0)))), kMinLog2, kMaxLog2);
  auto it = loss_.find({n, lg});
  if (it == loss_.end()) it = loss_.emplace(std::make_pair(n, lg), loss_s(n, std::ldexp(1.0, lg))).first;
  return 1 + std::max(0.0, it->second - credit_s) * line_rate_ / (n * bytes);
}

} // namespace twinscale::sim::congestion
