#include "sim/per_rank_csv.hpp"

#include <cstdio>

namespace twinscale::sim {

std::string per_rank_csv(const SimReport& r) {
  std::string out = "rank,tp,pp,dp,forward_s,backward_s,comm_wait_s\n";
  out.reserve(out.size() + r.per_rank.size() * 64);
  char buf[160];
  for (const auto& t : r.per_rank) {
    std::snprintf(buf, sizeof buf, "%lld,%lld,%lld,%lld,%.9f,%.9f,%.9f\n", static_cast<long long>(t.rank),
                  static_cast<long long>(t.tp), static_cast<long long>(t.pp), static_cast<long long>(t.dp), t.forward_s,
                  t.backward_s, t.comm_wait_s);
    out += buf;
  }
  return out;
}

} // namespace twinscale::sim
