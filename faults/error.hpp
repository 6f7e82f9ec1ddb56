// Errors raised by the faults layer: a fault plan, fault model or recovery/checkpoint
// policy whose values are individually well-formed but impossible or contradictory
// (unknown link name, overlapping outages of one link, a checkpoint interval shorter
// than the checkpoint itself…). Messages name the event or field and what is valid.
#pragma once

#include <stdexcept>
#include <string>

#include "common/error.hpp"

namespace twinscale::faults {

class FaultError : public Error {
public:
  explicit FaultError(const std::string& what) : Error(what) {}
};

} // namespace twinscale::faults
