// The one error policy of twinscale (DESIGN.md, STYLE.md "Errors"):
//  - bad input (a file, key, CLI value, rank or op that cannot be used) throws a type
//    derived from twinscale::Error whose message names the culprit and says what would be
//    valid; the CLI prints it and exits 1;
//  - a broken internal invariant throws std::logic_error (TWINSCALE_ASSERT); the CLI
//    reports an internal error and exits 3;
//  - expected run outcomes (a link died, a rank timed out) are values in reports.
// Each layer derives its typed errors from Error: schedules::JobError, ScheduleError,
// topology::TopologyError, faults::FaultError, sim::SimError, backend::BackendError,
// config::ConfigError. Header-only, below every layer: anything may include it.
#pragma once

#include <stdexcept>
#include <string>

namespace twinscale {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

} // namespace twinscale
