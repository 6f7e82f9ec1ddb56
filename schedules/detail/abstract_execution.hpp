// Private: the deadlock check of the validator (an abstract execution of a schedule).
#pragma once

#include <vector>

#include "schedules/execution_rules.hpp"
#include "schedules/validate.hpp"

namespace twinscale::schedules::detail {

/// Runs every rank's program under the execution rules (execution_rules.hpp) with zero-time ops and
/// reports each rank left with unfinished ops (the op it is stuck on and what it waits
/// for). Assumes collectives and messages were already checked to match. With
/// `by_symmetry`, only one rank per pipeline stage is executed (see the .cpp).
std::vector<Violation> find_deadlocks(const ExecutionRules& rules, bool by_symmetry, size_t max_violations);

} // namespace twinscale::schedules::detail
