#include "config/presets.hpp"

#include "config/error.hpp"

namespace twinscale::config {

std::string_view preset_text(std::string_view kind, std::string_view name) {
  for (const auto& p : detail::embedded_presets())
    if (p.kind == kind && p.name == name) return p.text;
  std::string valid;
  for (const auto& n : preset_names(kind)) valid += (valid.empty() ? "" : ", ") + n;
  throw ConfigError("unknown " + std::string(kind) + " preset '" + std::string(name) +
                    "'; valid: " + (valid.empty() ? std::string("(none)") : valid));
}

std::vector<std::string> preset_names(std::string_view kind) {
  std::vector<std::string> out;
  for (const auto& p : detail::embedded_presets())
    if (p.kind == kind) out.emplace_back(p.name);
  return out;
}

} // namespace twinscale::config
