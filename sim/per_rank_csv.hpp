// Per-rank times of a simulated run as CSV, for diagnosis tools (straggler and hang
// detection): one header line `rank,tp,pp,dp,forward_s,backward_s,comm_wait_s`, then one
// line per rank in rank order, seconds with 9 decimals (deterministic text).
#pragma once

#include <string>

#include "sim/simulate.hpp"

namespace twinscale::sim {

std::string per_rank_csv(const SimReport& report);

} // namespace twinscale::sim
