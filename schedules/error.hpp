// Errors raised by the schedules layer: a job that cannot be lowered, or a schedule
// file that cannot be read. Messages name the key, rank or op and what would be valid.
#pragma once

#include <stdexcept>
#include <string>

#include "common/error.hpp"

namespace twinscale::schedules {

/// A job description whose values are individually well-formed but impossible
/// together (tp·pp·dp ≠ GPUs, layers not divisible by pp·vpp, memory does not fit…).
class JobError : public Error {
public:
  explicit JobError(const std::string& what) : Error(what) {}
};

/// A schedule (in memory or read from JSON) that is malformed or cannot run.
class ScheduleError : public Error {
public:
  explicit ScheduleError(const std::string& what) : Error(what) {}
};

} // namespace twinscale::schedules

/// Internal invariant: never user input. Throws std::logic_error (no exit(), no abort()).
#define TWINSCALE_ASSERT(cond, msg)                                                                                    \
  do {                                                                                                                 \
    if (!(cond))                                                                                                       \
      throw std::logic_error(std::string("internal error: ") + (msg) + " [" #cond "] at " + __FILE__ + ":" +           \
                             std::to_string(__LINE__));                                                                \
  } while (0)
