// Up-front estimate of a simulation's memory and wall time, so that `simulate` (and a
// campaign that simulates its iteration time) refuses, in one line and before building
// anything, a run that would not fit this machine's memory — instead of growing until the
// kernel kills it (flow mode at 131,072 GPUs reached 19 GB).
#pragma once

#include "schedules/estimate.hpp"
#include "schedules/job.hpp"
#include "sim/simulate.hpp"

namespace twinscale::sim {

/// Memory and wall time of simulating one iteration of `job` in `mode`: the lowered
/// schedule (schedules::estimate_lowering), the fabric, and the per-rank cost of the mode.
schedules::ResourceEstimate estimate_simulation(const schedules::JobSpec& job, SimMode mode, bool aggregate);

/// estimate_simulation within the available memory, else a JobError (one line) with the
/// estimate and how to proceed (analytic mode, aggregation, fewer GPUs).
/// Returns the estimate (for a log line).
schedules::ResourceEstimate check_simulation_fits(const schedules::JobSpec& job, SimMode mode, bool aggregate);

} // namespace twinscale::sim
