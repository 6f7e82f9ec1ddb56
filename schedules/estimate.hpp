// Up-front estimates of what a command will cost (memory, time) so that a run that would
// not fit this machine's memory is refused in one line, before it starts, with the
// estimate and how to proceed. Each estimate is an upper-leaning bound from measured
// per-object costs (the constants' sources are next to them in estimate.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "schedules/job.hpp"

namespace twinscale::schedules {

struct ResourceEstimate {
  double memory_bytes = 0;
  double seconds = 0;
};

/// Ops of the longest per-rank program of `job` (an upper-leaning estimate, within 2× of
/// the lowered count for every preset), computed in floating point: never overflows.
double estimate_ops_per_program(const JobSpec& job);

/// Memory and time of lower(job): the distinct programs (about one per pipeline stage),
/// their dependency lists and the rank → program table.
ResourceEstimate estimate_lowering(const JobSpec& job);

/// "1.8 GiB" / "21 s" for messages.
std::string format_bytes(double bytes);
std::string format_seconds(double seconds);

/// Throws JobError, one line: "<what> needs about X of memory (estimate), but this machine
/// has Y available (MemAvailable); <how_to_proceed>", when the estimate exceeds
/// available_memory_bytes() (schedules/input_file.hpp).
void require_fits(const std::string& what, const ResourceEstimate& estimate, const std::string& how_to_proceed);

/// The checks lower() makes before building anything: ops per program below 2^31 (op
/// indices are 32-bit) and estimate_lowering(job) within the available memory.
void check_lowering_size(const JobSpec& job);

} // namespace twinscale::schedules
