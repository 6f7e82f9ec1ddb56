// Errors in user-written configuration files (jobs, clusters, fault plans) and presets.
#pragma once

#include <stdexcept>
#include <string>

#include "common/error.hpp"

namespace twinscale::config {

/// Bad input in a configuration file: the message names the file and key and says
/// what would be valid.
class ConfigError : public Error {
public:
  explicit ConfigError(const std::string& what) : Error(what) {}
};

} // namespace twinscale::config
