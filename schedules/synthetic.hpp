// A small, valid, hand-built schedule (GPipe order: all forwards, then all backwards)
// for exercising the executor without the lowering pass: every op kind the CPU device
// runs, one program per pipeline stage. Used by tests, bench_executor and
// `twinscale run --synthetic TPxDPxPP` (Megatron's order).
#pragma once

#include <cstdint>

#include "schedules/schedule.hpp"

namespace twinscale::schedules {

struct SyntheticOptions {
  int64_t micro_batches = 2;
  int64_t hidden = 64; // GEMMs are (tokens × hidden) · (hidden × hidden)
  int64_t tokens = 32;
  int64_t gemms_per_stage = 1; // GEMM + TP all-reduce pairs per micro-batch and direction
};

Schedule synthetic_schedule(const Layout& layout, const SyntheticOptions& options = {});

} // namespace twinscale::schedules
