// Integer options parsed exactly. CLI11's own conversion wraps "--seed -1" to 2^64 − 1
// and clamps "--gpus 1e20" to 9223372036854775807; these helpers accept only a whole
// decimal number inside a stated range. A number out of range is bad input
// (config::ConfigError, exit 1); text that is not a whole number ("x", "1e20", "1.5") is a
// usage error (CLI::ValidationError, exit 2). Both messages name the option, the value
// given and what would be valid.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace twinscale::cli {

/// `text` as an integer in [min, max]; ConfigError("--name 'text': ...") otherwise.
/// `range` explains the bounds ("GPUs of one job: 1 to 2^20").
int64_t parse_integer_option(const std::string& name, const std::string& text, int64_t min, int64_t max,
                             const std::string& range);
/// `text` as a seed: 0 to 2^64 − 1, no sign.
uint64_t parse_seed_option(const std::string& name, const std::string& text);

/// A job shape "AxBxC" (three whole numbers ≥ 1 whose product is at most
/// schedules::kMaxRanks), in the order written; ConfigError naming `name` and showing
/// `example` otherwise.
std::array<int64_t, 3> parse_shape_option(const std::string& name, const std::string& text, const std::string& example);

/// Registers `name` on `app` storing into `dest` through parse_integer_option.
CLI::Option* add_integer_option(CLI::App& app, const std::string& name, int64_t& dest, int64_t min, int64_t max,
                                const std::string& range, const std::string& help);
CLI::Option* add_integer_option(CLI::App& app, const std::string& name, std::optional<int64_t>& dest, int64_t min,
                                int64_t max, const std::string& range, const std::string& help);
/// The same for int (ranges within int).
CLI::Option* add_integer_option(CLI::App& app, const std::string& name, int& dest, int64_t min, int64_t max,
                                const std::string& range, const std::string& help);
CLI::Option* add_seed_option(CLI::App& app, const std::string& name, uint64_t& dest, const std::string& help);

/// Before CLI11 parses: a first word that is not a sub-command of `app` (or of the
/// sub-command it names, and so on) gets "unknown sub-command 'x'; valid: a, b, c" instead
/// of CLI11's "A subcommand is required". Returns that message, or "" if none.
std::string unknown_subcommand(CLI::App& app, int argc, const char* const* argv);

/// After parsing: every number option given (CLI11 type FLOAT) holds a finite number.
/// "nan", "inf" and their kin are refused naming the option (a ConfigError: exit 1), so
/// no comparison downstream silently passes on a NaN (`diagnose --min-z nan`).
void require_finite_numbers(const CLI::App& app);

} // namespace twinscale::cli
