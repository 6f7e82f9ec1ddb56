// The SimGrid this build was compiled against (for `twinscale --version`).
#pragma once

#include <string>

namespace twinscale::sim {

/// "SimGrid 3.32.0" (the headers' version; SimGrid's own string for its library).
std::string simgrid_version();

} // namespace twinscale::sim
