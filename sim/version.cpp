#include "sim/version.hpp"

#include <simgrid/config.h> // SG_BEGIN_DECL, which version.h uses
#include <simgrid/version.h>

namespace twinscale::sim {

std::string simgrid_version() {
  return "SimGrid " + std::to_string(SIMGRID_VERSION_MAJOR) + "." + std::to_string(SIMGRID_VERSION_MINOR) + "." +
         std::to_string(SIMGRID_VERSION_PATCH);
}

} // namespace twinscale::sim
