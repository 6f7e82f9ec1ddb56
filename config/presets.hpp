// Built-in presets: TOML files under presets/<kind>/<name>.toml, embedded at build time.
// Kinds: "jobs", "clusters", "faults", "recovery".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace twinscale::config {

struct PresetFile {
  std::string_view kind;
  std::string_view name;
  std::string_view text;
};

/// The preset's TOML text; throws ConfigError listing the valid names if unknown.
std::string_view preset_text(std::string_view kind, std::string_view name);
std::vector<std::string> preset_names(std::string_view kind);

namespace detail {
const std::vector<PresetFile>& embedded_presets();
}

} // namespace twinscale::config
