// Errors in user-written configuration files (jobs, clusters, fault plans) and presets.
#pragma once

#include <stdexcept>
#include <string>

namespace twinscale::config {

/// Bad input in a configuration file: the message names the file and key and says
/// what would be valid.
class ConfigError : public std::runtime_error {
public:
  explicit ConfigError(const std::string& what) : std::runtime_error(what) {}
};

} // namespace twinscale::config
