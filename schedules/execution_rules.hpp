// The execution rules every executor follows (simulator, real backend, the validator's
// abstract execution), stated once. What exists today:
// - program index: an op is identified by its index in its rank's program; dependencies
//   point to earlier indices; ops of one stream run in program order;
// - communicators and their order: schedules/nccl_order.hpp (communicator_of: a
//   collective's group, or one directed channel per point-to-point pair; a
//   communicator's ops are matched across ranks by their sequence number on it);
// - the order in which ready ops start (below): when several ops are ready at once, the
//   higher Op::priority starts first; ties start in program order.
// Allocation-free, so the executors' hot loops can call it per event.
#pragma once

#include <cstdint>
#include <span>

#include "schedules/schedule.hpp"

namespace twinscale::schedules {

/// True when ready op `a` starts before ready op `b` of the same program: higher
/// priority first, then the lower program index.
inline bool starts_before(int32_t priority_a, uint32_t index_a, int32_t priority_b, uint32_t index_b) {
  return priority_a != priority_b ? priority_a > priority_b : index_a < index_b;
}

inline bool starts_before(const Program& p, uint32_t a, uint32_t b) {
  return starts_before(p.ops[a].priority, a, p.ops[b].priority, b);
}

/// Sorts `ready` (op indices of `p`, a handful: one per stream) into start order, in place.
void order_ready(const Program& p, std::span<uint32_t> ready);

} // namespace twinscale::schedules
