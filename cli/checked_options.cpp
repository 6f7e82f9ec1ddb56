#include "cli/checked_options.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "config/error.hpp"
#include "schedules/error.hpp"
#include "schedules/limits.hpp"

namespace twinscale::cli {

int64_t parse_integer_option(const std::string& name, const std::string& text, int64_t min, int64_t max,
                             const std::string& range) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  const std::string valid = "; valid: a whole number from " + std::to_string(min) + " to " + std::to_string(max) +
                            (range.empty() ? "" : " (" + range + ")");
  const bool syntax = ptr != end || text.empty() || ec == std::errc::invalid_argument;
  if (syntax) // not a number at all: a usage error (exit 2), as CLI11 reports it
    throw CLI::ValidationError(name + " '" + text + "': not a whole number" + valid);
  if (ec != std::errc() || v < min || v > max) // a number, but not a valid one: bad input (exit 1)
    throw config::ConfigError(name + " '" + text + "': out of range" + valid);
  return v;
}

uint64_t parse_seed_option(const std::string& name, const std::string& text) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  const std::string valid = "; valid: a whole number from 0 to " + std::to_string(UINT64_MAX);
  if (!text.empty() && text[0] == '-' && text.size() > 1 &&
      std::all_of(text.begin() + 1, text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw config::ConfigError(name + " '" + text + "': a seed is not negative" + valid);
  if (text.empty() || ptr != end || ec == std::errc::invalid_argument)
    throw CLI::ValidationError(name + " '" + text + "': not a whole number" + valid);
  if (ec != std::errc()) throw config::ConfigError(name + " '" + text + "': out of range" + valid);
  return v;
}

std::array<int64_t, 3> parse_shape_option(const std::string& name, const std::string& text,
                                          const std::string& example) {
  std::array<int64_t, 3> out{};
  size_t at = 0;
  for (int i = 0; i < 3; ++i) {
    const size_t end = i < 2 ? text.find('x', at) : text.size();
    int64_t v = 0;
    const char* first = text.data() + at;
    const char* last = text.data() + (end == std::string::npos ? text.size() : end);
    const auto [ptr, ec] = std::from_chars(first, last, v);
    if (end == std::string::npos || first == last || ec != std::errc() || ptr != last || v < 1)
      throw config::ConfigError(name + " '" + text + "': expected three whole numbers ≥ 1 joined by 'x', e.g. " +
                                example);
    out[static_cast<size_t>(i)] = v;
    at = end + 1;
  }
  try {
    schedules::check_layout_sizes(out[0], out[1], out[2], name + " '" + text + "'");
  } catch (const schedules::JobError& e) {
    throw config::ConfigError(e.what());
  }
  return out;
}

namespace {

/// `help` with " (default VALUE)" appended, unless it already states a default.
std::string with_default(const std::string& help, const std::string& value) {
  if (help.find("(default") != std::string::npos) return help;
  return help + " (default " + value + ")";
}

} // namespace

CLI::Option* add_integer_option(CLI::App& app, const std::string& name, int64_t& dest, int64_t min, int64_t max,
                                const std::string& range, const std::string& help) {
  return app
      .add_option_function<std::string>(
          name,
          [&dest, name, min, max, range](const std::string& t) {
            dest = parse_integer_option(name, t, min, max, range);
          },
          with_default(help, std::to_string(dest)))
      ->type_name("INT");
}

CLI::Option* add_integer_option(CLI::App& app, const std::string& name, std::optional<int64_t>& dest, int64_t min,
                                int64_t max, const std::string& range, const std::string& help) {
  return app
      .add_option_function<std::string>(
          name,
          [&dest, name, min, max, range](const std::string& t) {
            dest = parse_integer_option(name, t, min, max, range);
          },
          help)
      ->type_name("INT");
}

CLI::Option* add_integer_option(CLI::App& app, const std::string& name, int& dest, int64_t min, int64_t max,
                                const std::string& range, const std::string& help) {
  return app
      .add_option_function<std::string>(
          name,
          [&dest, name, min, max, range](const std::string& t) {
            dest = static_cast<int>(parse_integer_option(name, t, min, max, range));
          },
          with_default(help, std::to_string(dest)))
      ->type_name("INT");
}

CLI::Option* add_seed_option(CLI::App& app, const std::string& name, uint64_t& dest, const std::string& help) {
  return app
      .add_option_function<std::string>(
          name, [&dest, name](const std::string& t) { dest = parse_seed_option(name, t); },
          with_default(help, std::to_string(dest)))
      ->type_name("UINT");
}

std::string unknown_subcommand(CLI::App& app, int argc, const char* const* argv) {
  CLI::App* current = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') return "";
    const auto subs = current->get_subcommands([](CLI::App*) { return true; });
    if (subs.empty()) return "";
    // a command that also takes positionals (sweep STUDY | sweep show DB): a word that is
    // no sub-command is its positional, for CLI11 to check
    const bool takes_positionals =
        !current->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
    std::string valid;
    CLI::App* next = nullptr;
    for (CLI::App* s : subs) {
      valid += (valid.empty() ? "" : ", ") + s->get_name();
      if (s->get_name() == word) next = s;
    }
    if (!next && takes_positionals) return "";
    if (!next)
      return "unknown sub-command '" + word + "'" +
             (current == &app ? std::string() : " of '" + current->get_name() + "'") + "; valid: " + valid +
             " (see --help)";
    current = next;
  }
  return "";
}

void require_finite_numbers(const CLI::App& app) {
  for (const CLI::Option* o : app.get_options()) {
    if (o->count() == 0 || o->get_type_name().rfind("FLOAT", 0) != 0) continue; // "FLOAT", "FLOAT:FLOAT in [...]"
    for (const std::string& text : o->results()) {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (end != text.c_str() && !std::isfinite(v))
        throw config::ConfigError(o->get_name() + " '" + text + "': not a finite number; valid: a finite number" +
                                  (o->get_description().empty() ? "" : " (" + o->get_description() + ")"));
    }
  }
  for (const CLI::App* sub : app.get_subcommands()) require_finite_numbers(*sub);
}

} // namespace twinscale::cli
