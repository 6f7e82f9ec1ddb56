#include "config/toml_reader.hpp"

#include <algorithm>
#include <filesystem>

#include "common/did_you_mean.hpp"
#include "common/key_schema.hpp"
#include "config/presets.hpp"
#include "schedules/input_file.hpp"

namespace twinscale::config {

const toml::table TableReader::empty_{};

TableReader::TableReader(const toml::table& table, std::string file, std::string prefix)
    : table_(&table), file_(std::move(file)), prefix_(std::move(prefix)) {}

std::string TableReader::full_key(std::string_view key) const {
  return prefix_.empty() ? std::string(key) : prefix_ + "." + std::string(key);
}

void TableReader::fail(std::string_view key, const std::string& why) const {
  throw ConfigError(file_ + ": key '" + full_key(key) + "' " + why);
}

void TableReader::fail_missing(std::string_view key, const std::string& what) const {
  std::string hint;
  for (auto&& [k, v] : *table_)
    if (!read_.count(k.str()) && edit_distance(k.str(), key) <= 2)
      hint += (hint.empty() ? "; found '" : "', '") + full_key(k.str());
  if (!hint.empty()) hint += "' instead: a misspelling?";
  fail(key, "is missing (" + what + ")" + hint);
}

bool TableReader::has(std::string_view key) const { return table_->contains(key); }

bool TableReader::holds_string(std::string_view key) const {
  const toml::node* n = table_->get(key);
  return n != nullptr && n->is_string();
}

const toml::node* TableReader::lookup(std::string_view key, const char* expected) {
  read_.emplace(key);
  known_.emplace_back(key);
  (void)expected;
  return table_->get(key);
}

static const char* type_name(const toml::node& n) {
  switch (n.type()) {
  case toml::node_type::string: return "a string";
  case toml::node_type::integer: return "an integer";
  case toml::node_type::floating_point: return "a number";
  case toml::node_type::boolean: return "a boolean";
  case toml::node_type::array: return "an array";
  case toml::node_type::table: return "a table";
  default: return "a date/time";
  }
}

int64_t TableReader::get_int(std::string_view key, std::optional<int64_t> fallback, int64_t min, int64_t max) {
  const toml::node* n = lookup(key, "integer");
  if (!n) {
    if (fallback) return *fallback;
    fail_missing(key, "an integer is required");
  }
  auto v = n->value_exact<int64_t>();
  if (!v) fail(key, std::string("must be an integer, got ") + type_name(*n));
  if (*v < min || *v > max)
    fail(key, "is " + std::to_string(*v) + "; must be in [" + std::to_string(min) + ", " +
                  (max == INT64_MAX ? std::string("∞") : std::to_string(max)) + "]");
  return *v;
}

double TableReader::get_double(std::string_view key, std::optional<double> fallback, double min, double max) {
  const toml::node* n = lookup(key, "number");
  if (!n) {
    if (fallback) return *fallback;
    fail_missing(key, "a number is required");
  }
  std::optional<double> v;
  if (auto d = n->value_exact<double>())
    v = *d;
  else if (auto i = n->value_exact<int64_t>())
    v = static_cast<double>(*i);
  if (!v) fail(key, std::string("must be a number, got ") + type_name(*n));
  if (!(*v >= min && *v <= max)) {
    std::ostringstream os;
    if (min == kAboveZero) // as the key reference writes it
      os << "is " << *v << "; must be in (0, " << max << "]";
    else
      os << "is " << *v << "; must be in [" << min << ", " << max << "]";
    fail(key, os.str());
  }
  return *v;
}

bool TableReader::get_bool(std::string_view key, std::optional<bool> fallback) {
  const toml::node* n = lookup(key, "boolean");
  if (!n) {
    if (fallback) return *fallback;
    fail_missing(key, "true or false is required");
  }
  auto v = n->value_exact<bool>();
  if (!v) fail(key, std::string("must be true or false, got ") + type_name(*n));
  return *v;
}

std::string TableReader::get_string(std::string_view key, std::optional<std::string> fallback) {
  const toml::node* n = lookup(key, "string");
  if (!n) {
    if (fallback) return *fallback;
    fail_missing(key, "a string is required");
  }
  auto v = n->value_exact<std::string>();
  if (!v) fail(key, std::string("must be a string, got ") + type_name(*n));
  return *v;
}

std::vector<double> TableReader::get_double_array(std::string_view key, std::optional<std::vector<double>> fallback) {
  const toml::node* n = lookup(key, "array");
  if (!n) {
    if (fallback) return *fallback;
    fail_missing(key, "an array of numbers is required");
  }
  const toml::array* arr = n->as_array();
  if (!arr) fail(key, std::string("must be an array of numbers, got ") + type_name(*n));
  std::vector<double> out;
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::node& e = (*arr)[i];
    if (auto d = e.value_exact<double>())
      out.push_back(*d);
    else if (auto v = e.value_exact<int64_t>())
      out.push_back(static_cast<double>(*v));
    else
      fail(key, "[" + std::to_string(i) + "] must be a number, got " + type_name(e));
  }
  return out;
}

TableReader TableReader::table(std::string_view key, bool required) {
  const toml::node* n = lookup(key, "table");
  if (!n) {
    if (required) fail_missing(key, "a table [" + full_key(key) + "] is required");
    return TableReader(empty_, file_, full_key(key));
  }
  const toml::table* t = n->as_table();
  if (!t) fail(key, std::string("must be a table, got ") + type_name(*n));
  return TableReader(*t, file_, full_key(key));
}

std::vector<TableReader> TableReader::table_array(std::string_view key) {
  const toml::node* n = lookup(key, "array of tables");
  std::vector<TableReader> out;
  if (!n) return out;
  const toml::array* arr = n->as_array();
  if (!arr) fail(key, std::string("must be an array of tables ([[") + full_key(key) + "]]), got " + type_name(*n));
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::table* t = (*arr)[i].as_table();
    if (!t) fail(key, "[" + std::to_string(i) + "] must be a table");
    out.emplace_back(*t, file_, full_key(key) + "[" + std::to_string(i) + "]");
  }
  return out;
}

void TableReader::finish() const {
  for (auto&& [k, v] : *table_) {
    if (read_.count(k.str())) continue;
    std::set<std::string> valid(known_.begin(), known_.end());
    std::string list, near;
    for (auto& s : valid) list += (list.empty() ? "" : ", ") + s;
    if (const auto hint = nearest_name(valid, k.str())) near = "; did you mean '" + full_key(*hint) + "'?";
    throw ConfigError(file_ + ": unknown key '" + full_key(k.str()) + "'" + near +
                      (list.empty() ? std::string(" (this table takes no keys)") : "; valid keys here: " + list));
  }
}

namespace {

/// The deepest table/array nesting `text` can build, found without recursion: table
/// headers and dotted keys add one level per segment, inline tables and arrays one per
/// bracket. Counted conservatively (a float's '.' counts as a segment too) so that no
/// document toml++ builds is deeper than the figure; `line` is where the deepest starts.
struct TomlNesting {
  size_t depth = 0;
  size_t line = 1;
};

TomlNesting toml_nesting(std::string_view text) {
  struct Frame {
    char kind;    // '[' array value or '{' inline table
    size_t depth; // depth of the array's elements / the inline table's own level
  };
  std::vector<Frame> frames;
  TomlNesting worst;
  size_t header_depth = 0, value_depth = 0, dots = 0, line = 1;
  bool line_start = true, in_header = false;
  auto base = [&] { return frames.empty() ? header_depth : frames.back().depth; };
  auto note = [&](size_t d) {
    if (d > worst.depth) worst = {d, line};
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"' || c == '\'') { // a string: skip to its end (multi-line when tripled)
      const bool triple = text.substr(i, 3) == std::string(3, c);
      const size_t open = triple ? 3 : 1;
      size_t j = i + open;
      while (j < text.size()) {
        if (c == '"' && text[j] == '\\') {
          j += 2;
          continue;
        }
        if (text[j] == '\n') {
          ++line;
          if (!triple) break;
        }
        if (text[j] == c && (!triple || text.substr(j, 3) == std::string(3, c))) break;
        ++j;
      }
      i = j + (triple ? 2 : 0);
      line_start = false;
      continue;
    }
    if (c == '#') { // a comment: to the end of the line
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '\n') {
      ++line;
      if (frames.empty()) {
        dots = 0;
        line_start = true;
        in_header = false;
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') continue;
    const bool first = line_start;
    line_start = false;
    switch (c) {
    case '.':
      ++dots;
      note(base() + dots + 1);
      break;
    case '=':
      value_depth = base() + dots + 1;
      note(value_depth);
      dots = 0;
      break;
    case '[':
      if (frames.empty() && (first || in_header)) { // a table header [a.b] or [[a.b]]
        in_header = true;
        header_depth = 0;
        dots = 0;
        break;
      }
      frames.push_back({'[', value_depth + 1});
      value_depth = frames.back().depth;
      note(value_depth);
      dots = 0;
      break;
    case '{':
      frames.push_back({'{', value_depth});
      dots = 0;
      break;
    case ']':
      if (frames.empty()) {
        if (in_header && header_depth == 0) header_depth = dots + 1;
        note(header_depth + 1);
        dots = 0;
        break;
      }
      [[fallthrough]];
    case '}':
      if (!frames.empty()) frames.pop_back();
      if (!frames.empty() && frames.back().kind == '[') value_depth = frames.back().depth;
      dots = 0;
      break;
    case ',':
      dots = 0;
      if (!frames.empty() && frames.back().kind == '[') value_depth = frames.back().depth;
      break;
    default: break;
    }
  }
  return worst;
}

} // namespace

toml::table parse_toml(std::string_view text, const std::string& file) {
  if (text.size() > schedules::kMaxTomlBytes)
    throw ConfigError(file + ": TOML document of " + std::to_string(text.size()) + " bytes is larger than the " +
                      std::to_string(schedules::kMaxTomlBytes) + "-byte limit for hand-written TOML files");
  if (const TomlNesting n = toml_nesting(text); n.depth > kMaxTomlNesting)
    throw ConfigError(file + ":" + std::to_string(n.line) + ": TOML nesting of " + std::to_string(n.depth) +
                      " levels (table headers, dotted keys, inline tables and arrays) is deeper than the limit of " +
                      std::to_string(kMaxTomlNesting) + "; a configuration needs a handful");
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw ConfigError(file + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) +
                      ": TOML syntax error: " + std::string(e.description()));
  }
}

toml::table parse_toml_file(const std::string& path) { return parse_toml(read_config_file(path, "TOML file"), path); }

std::string read_config_file(const std::string& path, const std::string& what) {
  try {
    return schedules::read_input_file(path, what, schedules::InputKind::Toml);
  } catch (const schedules::InputFileError& e) {
    throw ConfigError(e.what());
  }
}

std::string resolve_document_reference(const std::string& document, const std::string& ref, const std::string& key,
                                       std::string_view preset_kind) {
  namespace fs = std::filesystem;
  if (ref.empty()) return ref;
  const auto presets = preset_names(preset_kind);
  if (std::find(presets.begin(), presets.end(), ref) != presets.end()) return ref;
  std::string valid;
  for (const auto& n : presets) valid += (valid.empty() ? "" : ", ") + n;
  const std::string rule = "; valid: a " + std::string(preset_kind) + " preset (" + valid +
                           ") or a file in the document's folder (a relative name is taken from there)";
  const std::string given = document + ": key '" + key + "' = \"" + ref + "\"";
  const fs::path ref_path(ref);
  const fs::path folder = fs::path(document).parent_path();
  const fs::path resolved =
      ref_path.is_absolute() ? ref_path.lexically_normal() : (folder / ref_path).lexically_normal();
  // inside the folder once symbolic links and '..' are resolved: no /dev/zero, no ../../etc
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::absolute(folder.empty() ? fs::path(".") : folder, ec), ec);
  const fs::path target = fs::weakly_canonical(fs::absolute(resolved, ec), ec);
  const bool inside = !ec && std::mismatch(base.begin(), base.end(), target.begin(), target.end()).first == base.end();
  if (!inside) throw ConfigError(given + " points outside the document's folder" + rule);
  if (!fs::is_regular_file(target, ec))
    throw ConfigError(given + " is not a preset, and " + resolved.string() +
                      (fs::exists(target, ec) ? " is not a regular file" : " does not exist") + rule);
  return resolved.string();
}

} // namespace twinscale::config
