// `twinscale preset list [KIND]` and `twinscale preset show NAME [--kind KIND]`: the
// built-in presets (presets/<kind>/<name>.toml, embedded in the binary) and the TOML of one,
// as written — a starting point for a file of one's own.
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "config/error.hpp"
#include "config/presets.hpp"

namespace twinscale::cli {

namespace {

/// Every kind of preset, in the order listed.
std::vector<std::string> preset_kinds() {
  std::vector<std::string> kinds;
  for (const auto& p : config::detail::embedded_presets())
    if (std::find(kinds.begin(), kinds.end(), p.kind) == kinds.end()) kinds.emplace_back(p.kind);
  std::sort(kinds.begin(), kinds.end());
  return kinds;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

/// "job" → "jobs", "cluster" → "clusters": the singular a user may type.
std::string kind_of(const std::string& given) {
  const auto kinds = preset_kinds();
  for (const auto& k : kinds)
    if (given == k || given + "s" == k) return k;
  throw config::ConfigError("--kind '" + given + "': valid kinds: " + joined(kinds));
}

struct PresetArgs {
  std::string kind, name;
};

int show_preset(const PresetArgs& a) {
  const std::string kind = a.kind.empty() ? "" : kind_of(a.kind);
  std::vector<std::string> found;
  for (const auto& k : preset_kinds()) {
    if (!kind.empty() && k != kind) continue;
    const auto names = config::preset_names(k);
    if (std::find(names.begin(), names.end(), a.name) != names.end()) found.push_back(k);
  }
  if (found.empty()) {
    std::string valid;
    for (const auto& k : kind.empty() ? preset_kinds() : std::vector<std::string>{kind})
      valid += "\n  " + k + ": " + joined(config::preset_names(k));
    throw config::ConfigError("no " + (kind.empty() ? std::string("") : kind + " ") + "preset named '" + a.name +
                              "'; the presets are:" + valid);
  }
  if (found.size() > 1)
    throw config::ConfigError("preset '" + a.name + "' is a preset of several kinds (" + joined(found) +
                              "); choose one with --kind");
  std::cout << "# twinscale preset " << found.front() << "/" << a.name << "\n"
            << config::preset_text(found.front(), a.name);
  return 0;
}

int list_presets(const PresetArgs& a) {
  const std::string kind = a.kind.empty() ? "" : kind_of(a.kind);
  for (const auto& k : preset_kinds())
    if (kind.empty() || k == kind) std::cout << k << ": " << joined(config::preset_names(k)) << "\n";
  return 0;
}

} // namespace

void add_preset_command(CLI::App& app, Action& action) {
  CLI::App* cmd = app.add_subcommand("preset", "the built-in presets: list them, print one as TOML");
  cmd->require_subcommand(1);
  auto show = std::make_shared<PresetArgs>();
  CLI::App* sh = cmd->add_subcommand("show", "print a preset's TOML (a job, cluster, software, faults or recovery "
                                             "preset) — a starting point for a file of one's own");
  sh->add_option("name", show->name, "the preset's name")->required();
  sh->add_option("--kind", show->kind, "which kind, where a name is a preset of several");
  sh->callback([show, &action] { action = [show] { return show_preset(*show); }; });
  auto list = std::make_shared<PresetArgs>();
  CLI::App* ls = cmd->add_subcommand("list", "the presets of every kind (or of one)");
  ls->add_option("kind", list->kind, "jobs, clusters, software, faults, recovery or hardware");
  ls->callback([list, &action] { action = [list] { return list_presets(*list); }; });
}

} // namespace twinscale::cli
