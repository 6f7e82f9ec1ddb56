// Whether two schedules are the same programs to run (schedule_equal.cpp): what a
// round trip through a file format (JSON, Chakra) or a faster way of lowering must keep.
#pragma once

#include <string>

#include "schedules/schedule.hpp"

namespace twinscale::schedules {

/// Whether two schedules are equal as programs to run: same layout and job, and for
/// every rank the same ops in the same order, each with equal kind, kernel, stream,
/// dtype, group, priority, peer, FLOPs, bytes, shape, labels, name (as text) and
/// dependencies (in order); plus equal memory estimates and model FLOPs. How ranks share
/// programs and how names are numbered do not matter. On a difference, `why` says where.
bool schedules_equal(const Schedule& a, const Schedule& b, std::string* why = nullptr);

} // namespace twinscale::schedules
