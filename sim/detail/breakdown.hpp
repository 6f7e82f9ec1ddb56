// Where each executed rank's time goes (SimReport::Breakdown), from the op timings.
#pragma once

#include <vector>

#include "schedules/schedule.hpp"
#include "sim/detail/executor.hpp"
#include "sim/simulate.hpp"

namespace twinscale::sim::detail {

/// Breakdown of one executed rank over [0, horizon_s): a sweep over its compute
/// intervals, communication transfer intervals (by kind) and pipeline receive waits.
Breakdown rank_breakdown(const schedules::Program& program, const std::vector<OpTiming>& timing, double horizon_s,
                         bool pipelined);

RankTimes rank_times(const schedules::Program& program, const std::vector<OpTiming>& timing, const Breakdown& b);

} // namespace twinscale::sim::detail
