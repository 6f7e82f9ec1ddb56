#include "cli/layout_notation.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/checked_options.hpp"
#include "cli/job_args.hpp"
#include "config/error.hpp"
#include "schedules/output_file.hpp"

namespace twinscale::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* kForms = "TPxDPxPP in Megatron's order (e.g. 8x16x8) or named parts in any order joined by 'x' "
                               "(e.g. tp8xcp2xdp4xpp8; tp, cp, ep, dp, pp)";

/// "tp8" → ("tp", 8); nullopt unless a known name followed by a whole number ≥ 1.
std::optional<std::pair<std::string, int64_t>> named_part(const std::string& part) {
  if (part.size() < 3) return std::nullopt;
  const std::string name = part.substr(0, 2);
  if (name != "tp" && name != "cp" && name != "ep" && name != "dp" && name != "pp") return std::nullopt;
  int64_t v = 0;
  for (size_t i = 2; i < part.size(); ++i) {
    if (part[i] < '0' || part[i] > '9' || v > (int64_t{1} << 40)) return std::nullopt;
    v = 10 * v + (part[i] - '0');
  }
  if (v < 1) return std::nullopt;
  return std::make_pair(name, v);
}

} // namespace

schedules::Layout LayoutShape::layout() const {
  schedules::Layout l;
  l.tp = tp;
  l.dp = dp * cp;
  l.pp = pp;
  l.cp = cp;
  l.ep = ep;
  return l;
}

std::string layout_text(const LayoutShape& s) {
  std::ostringstream o;
  o << "tp " << s.tp;
  if (s.cp > 1) o << " × cp " << s.cp;
  o << " × dp " << s.dp << " × pp " << s.pp;
  if (s.ep > 1) o << ", ep " << s.ep;
  return o.str();
}

std::string layout_text(const schedules::ParallelSpec& p) {
  return layout_text(LayoutShape{p.tp, p.cp, p.ep, p.dp, p.pp});
}

std::string layout_text(const schedules::Layout& l) {
  const int64_t cp = l.cp > 0 ? l.cp : 1;
  return layout_text(LayoutShape{l.tp, cp, l.ep, l.dp / cp, l.pp});
}

LayoutShape parse_layout_option(const std::string& option, const std::string& text, bool allow_cp_ep) {
  if (!text.empty() && text[0] >= '0' && text[0] <= '9') { // three numbers, Megatron's order
    const auto v = parse_shape_option(option, text, std::string("8x16x8 (") + kForms + ")");
    return LayoutShape{v[0], 1, 1, v[1], v[2]};
  }
  std::map<std::string, int64_t> parts;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, 'x')) {
    const auto p = named_part(part);
    if (!p || !parts.emplace(p->first, p->second).second)
      throw config::ConfigError(option + " '" + text +
                                "': " + (p ? "'" + p->first + "' given twice" : "'" + part + "'") +
                                " is not a layout part; give " + kForms);
  }
  const auto get = [&](const char* n) { return parts.count(n) ? parts.at(n) : int64_t{1}; };
  LayoutShape s{get("tp"), get("cp"), get("ep"), get("dp"), get("pp")};
  if (!allow_cp_ep && (s.cp > 1 || s.ep > 1))
    throw config::ConfigError(option + " '" + text + "': this option takes tp, dp and pp only (no cp or ep)");
  if (s.dp % s.ep != 0)
    throw config::ConfigError(option + " '" + text + "': ep " + std::to_string(s.ep) + " must divide dp " +
                              std::to_string(s.dp) + " (the experts are spread over dp ranks)");
  // the same bounds as three numbers (each ≥ 1, the world at most 2^20)
  parse_shape_option(option, std::to_string(s.tp) + "x" + std::to_string(s.dp * s.cp) + "x" + std::to_string(s.pp),
                     kForms);
  return s;
}

void write_run_layout(const std::string& dir, const schedules::Layout& l) {
  const int64_t cp = l.cp > 0 ? l.cp : 1;
  nlohmann::ordered_json j;
  j["format"] = "twinscale-layout";
  j["format_version"] = 1;
  j["tp"] = l.tp;
  j["cp"] = cp;
  j["ep"] = l.ep;
  j["dp"] = l.dp / cp;
  j["pp"] = l.pp;
  j["world"] = l.world();
  make_output_dir(dir, "--run-dir");
  schedules::write_output_file((fs::path(dir) / "layout.json").string(), j.dump(1) + "\n");
}

std::optional<schedules::Layout> read_run_layout(const std::string& dir) {
  const fs::path path = fs::path(dir) / "layout.json";
  if (!fs::is_regular_file(path)) return std::nullopt;
  std::ifstream in(path);
  try {
    const auto j = nlohmann::json::parse(in);
    if (j.value("format", "") != "twinscale-layout")
      throw config::ConfigError(path.string() + ": not a twinscale layout file (its format is not twinscale-layout)");
    LayoutShape s{j.at("tp").get<int64_t>(), j.at("cp").get<int64_t>(), j.at("ep").get<int64_t>(),
                  j.at("dp").get<int64_t>(), j.at("pp").get<int64_t>()};
    if (s.tp < 1 || s.cp < 1 || s.ep < 1 || s.dp < 1 || s.pp < 1)
      throw config::ConfigError(path.string() + ": every degree must be ≥ 1");
    return s.layout();
  } catch (const nlohmann::json::exception& e) {
    throw config::ConfigError(path.string() + ": " + e.what() + " (a layout file: tp, cp, ep, dp, pp)");
  }
}

} // namespace twinscale::cli
