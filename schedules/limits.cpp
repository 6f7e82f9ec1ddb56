#include "schedules/limits.hpp"

#include "schedules/error.hpp"

namespace twinscale::schedules {

void require_at_most(const std::string& what, int64_t value, int64_t max, const std::string& reason) {
  if (value > max)
    throw JobError(what + " = " + std::to_string(value) + " is larger than " + std::to_string(max) + " (" + reason +
                   ")");
}

void check_layout_sizes(int64_t tp, int64_t dp, int64_t pp, const std::string& where) {
  const std::string sizes =
      "tp = " + std::to_string(tp) + ", dp = " + std::to_string(dp) + ", pp = " + std::to_string(pp);
  if (tp < 1 || dp < 1 || pp < 1) throw JobError(where + ": " + sizes + "; every size must be ≥ 1");
  const int64_t world = saturating_mul(saturating_mul(tp, dp), pp);
  if (world > kMaxRanks)
    throw JobError(where + ": " + sizes +
                   " gives tp·dp·pp = " + (world == INT64_MAX ? std::string("more than 2^63") : std::to_string(world)) +
                   " ranks; at most " + std::to_string(kMaxRanks) +
                   " (2^20, 8× the largest modelled cluster; ranks are 32-bit in traces and MPI)");
}

} // namespace twinscale::schedules
