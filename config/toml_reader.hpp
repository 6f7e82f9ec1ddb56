// A checked view of one TOML table: typed getters whose errors name the file and the
// full key and say what would be valid, and finish(), which rejects unknown keys.
// Every parser in config/ reads through this, so the error policy lives in one place.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "common/enum_names.hpp"
#include "config/error.hpp"

namespace twinscale::config {

class TableReader {
public:
  /// `file` is the path (or "preset NAME") for messages; `prefix` the dotted table path.
  TableReader(const toml::table& table, std::string file, std::string prefix = {});

  bool has(std::string_view key) const;
  /// The key is present and holds a string (for keys that take a boolean or a name).
  bool holds_string(std::string_view key) const;

  int64_t get_int(std::string_view key, std::optional<int64_t> fallback = std::nullopt, int64_t min = INT64_MIN,
                  int64_t max = INT64_MAX);
  double get_double(std::string_view key, std::optional<double> fallback = std::nullopt, double min = -1e300,
                    double max = 1e300);
  bool get_bool(std::string_view key, std::optional<bool> fallback = std::nullopt);
  std::string get_string(std::string_view key, std::optional<std::string> fallback = std::nullopt);
  std::vector<double> get_double_array(std::string_view key,
                                       std::optional<std::vector<double>> fallback = std::nullopt);

  /// A string key that must name one of the enum's values (its table, common/enum_names.hpp).
  template <class E, size_t N>
  E get_enum(std::string_view key, const EnumNames<E, N>& names,
             std::optional<std::type_identity_t<E>> fallback = std::nullopt) {
    std::optional<std::string> fb;
    if (fallback) fb = std::string(enum_name(names, *fallback));
    const std::string got = get_string(key, fb);
    if (const auto value = enum_from_name(names, got)) return *value;
    fail(key, "is \"" + got + "\"; valid values: " + enum_names_list(names));
  }
  /// A string key that must be one of `choices`; returns the matching value.
  template <class E>
  E get_enum(std::string_view key, std::initializer_list<std::pair<std::string_view, E>> choices,
             std::optional<E> fallback = std::nullopt) {
    std::optional<std::string> fb;
    if (fallback)
      for (auto& [name, value] : choices)
        if (value == *fallback) fb = std::string(name);
    const std::string got = get_string(key, fb);
    std::string valid;
    for (auto& [name, value] : choices) {
      if (name == got) return value;
      valid += (valid.empty() ? "" : ", ") + std::string(name);
    }
    fail(key, "is \"" + got + "\"; valid values: " + valid);
  }

  /// A sub-table; absent → an empty table (so its keys take their defaults) unless required.
  TableReader table(std::string_view key, bool required = false);
  /// An array of tables (e.g. [[event]]).
  std::vector<TableReader> table_array(std::string_view key);

  /// Throws ConfigError for every key present but never read, listing the valid keys.
  void finish() const;

  [[noreturn]] void fail(std::string_view key, const std::string& why) const;
  std::string full_key(std::string_view key) const;
  const std::string& file() const { return file_; }

private:
  [[noreturn]] void fail_missing(std::string_view key, const std::string& what) const;
  const toml::node* lookup(std::string_view key, const char* expected);

  const toml::table* table_;
  std::string file_;
  std::string prefix_;
  std::set<std::string, std::less<>> read_;
  std::vector<std::string> known_;
  static const toml::table empty_;
};

/// Deepest nesting a TOML document may have (segments of table headers and dotted keys,
/// inline tables and arrays together). toml++ builds and frees tables recursively, so a
/// 50,000-segment dotted key would overflow the stack; the configurations here use < 10.
inline constexpr size_t kMaxTomlNesting = 64;

/// Parses TOML text; a syntax error becomes a ConfigError naming file, line and column.
/// Text larger than schedules::kMaxTomlBytes or nested deeper than kMaxTomlNesting is
/// refused before parsing (a ConfigError naming the file, the line and the limit).
toml::table parse_toml(std::string_view text, const std::string& file);
/// Reads and parses a file; a missing file is a ConfigError.
toml::table parse_toml_file(const std::string& path);

/// The whole of a TOML input file, a `what` ("job file"): a regular file of at most
/// schedules::kMaxTomlBytes, else a ConfigError saying which rule failed.
std::string read_config_file(const std::string& path, const std::string& what);

/// A reference to another file inside a document (a job's `cluster`, a schedule's
/// `job.cluster`): a preset name of `preset_kind`, returned as is, or a regular file inside
/// the document's folder (a relative name is taken from that folder; symbolic links and
/// ".." are resolved before the check), returned as folder/ref. Anything else — a path
/// leading out of the folder, a device — is a ConfigError naming the document and `key`.
/// An empty reference is returned as is.
std::string resolve_document_reference(const std::string& document, const std::string& ref, const std::string& key,
                                       std::string_view preset_kind);

} // namespace twinscale::config
