// One description per configuration key: a table of KeyField entries per spec (the job,
// the cluster), each naming the dotted key, the member it sets, its type, unit,
// valid range or value names, default and a one-line doc. The file readers, the JSON
// reader and writer, the --set overrides and the generated key reference (docs/keys.md)
// all walk that one table, so a key is described once.
//
// Adding a key: one entry in the spec's table (e.g. schedules/job_keys.cpp), built with
// member<&Spec::a, &A::b>("section.key") or choice<...>("section.key", kNames) (or
// scaled<...>("section.key_ns", kNanoseconds) where the file's unit is not the member's),
// then .range(), .unit(), .doc(), and the optional flags below. Header-only, below every layer.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "common/enum_names.hpp"

namespace twinscale {

enum class KeyType : uint8_t { Integer, Number, Boolean, String, Name };

/// A key's value: Integer → int64_t, Number → double, Boolean → bool, String and Name
/// (one of the key's value names) → std::string.
using KeyValue = std::variant<int64_t, double, bool, std::string>;

/// When the JSON writer writes a key: always, only when it differs from the default
/// (so that files of specs that do not use it are unchanged), or when a predicate holds.
enum class JsonWrite : uint8_t { Always, UnlessDefault, When };

template <class Spec>
struct KeyField {
  std::string key;      ///< dotted key of files and --set ("parallel.tp"); "" = JSON only
  std::string json_key; ///< dotted path inside the spec's JSON object; "" = not in JSON
  KeyType type = KeyType::Integer;
  std::string unit; ///< "tokens", "s"; "" when a count or a choice
  int64_t int_min = std::numeric_limits<int64_t>::min();
  int64_t int_max = std::numeric_limits<int64_t>::max();
  double num_min = -1e300, num_max = 1e300;
  std::vector<std::string> names; ///< Name: the valid values, in their table's order
  bool accepts_bool = false;      ///< Name: true / false also accepted, meaning these two names:
  std::string true_name, false_name;
  std::string values_doc;     ///< the type and valid values in words, when the type alone misleads
  std::string doc;            ///< one line for the key reference
  std::string default_doc;    ///< the default as documented, when the value alone misleads
  bool required = false;      ///< a file must state it
  bool by_hand = false;       ///< the file reader reads it itself (rules that span keys)
  bool json_required = false; ///< the JSON reader refuses an object without it
  JsonWrite json_write = JsonWrite::Always;
  bool (*json_when)(const Spec&) = nullptr; ///< JsonWrite::When
  bool stack = false;                       ///< a software stack file may state it too
  /// The key means something only when this holds; a file stating it otherwise is refused
  /// with `applies_why` ("is set but …"). nullptr: it always applies.
  bool (*applies)(const Spec&) = nullptr;
  std::string applies_doc; ///< the condition in words, for the key reference
  std::string applies_why;
  std::function<KeyValue(const Spec&)> get;
  std::function<void(Spec&, const KeyValue&)> set;

  // Fluent settings for the tables.
  KeyField& range(int64_t lo, int64_t hi = std::numeric_limits<int64_t>::max()) {
    int_min = lo, int_max = hi;
    return *this;
  }
  KeyField& range_number(double lo, double hi) {
    num_min = lo, num_max = hi;
    return *this;
  }
  KeyField& in(std::string u) {
    unit = std::move(u);
    return *this;
  }
  KeyField& values_are(std::string v) {
    values_doc = std::move(v);
    return *this;
  }
  KeyField& says(std::string d) {
    doc = std::move(d);
    return *this;
  }
  KeyField& default_is(std::string d) {
    default_doc = std::move(d);
    return *this;
  }
  KeyField& must_be_given() {
    required = true;
    return *this;
  }
  KeyField& read_by_hand() {
    by_hand = true;
    return *this;
  }
  KeyField& in_json_always_present() {
    json_required = true;
    return *this;
  }
  KeyField& json_unless_default() {
    json_write = JsonWrite::UnlessDefault;
    return *this;
  }
  KeyField& json_only_when(bool (*when)(const Spec&)) {
    json_write = JsonWrite::When, json_when = when;
    return *this;
  }
  KeyField& json_at(std::string path) {
    json_key = std::move(path);
    return *this;
  }
  KeyField& not_in_json() {
    json_key.clear();
    return *this;
  }
  KeyField& not_in_files() {
    key.clear();
    return *this;
  }
  KeyField& stack_fact() {
    stack = true;
    return *this;
  }
  KeyField& only_when(bool (*pred)(const Spec&), std::string in_words, std::string why) {
    applies = pred, applies_doc = std::move(in_words), applies_why = std::move(why);
    return *this;
  }
};

/// A table of keys: "model", "schedule.overlap"; "" for the top-level keys.
struct KeySection {
  std::string key;      ///< in files ("precision"); "" = the top level
  std::string json_key; ///< in the JSON object ("schedule.precision")
  bool required = false;
  bool json_required = false;
  std::string doc;
};

namespace detail {
template <class T>
constexpr KeyType key_type_of() {
  if constexpr (std::is_same_v<T, bool>)
    return KeyType::Boolean;
  else if constexpr (std::is_same_v<T, int64_t>)
    return KeyType::Integer;
  else if constexpr (std::is_same_v<T, double>)
    return KeyType::Number;
  else {
    static_assert(std::is_same_v<T, std::string>, "a key is an int64_t, double, bool or std::string member");
    return KeyType::String;
  }
}
} // namespace detail

/// The member reached through the chain of pointers to members Ms (spec.*M1.*M2…).
template <auto... Ms, class Spec>
decltype(auto) member_of(Spec& spec) {
  return (spec.*....*Ms);
}

/// A key stored in a plain member (int64_t, double, bool or std::string).
template <class Spec, auto... Ms>
KeyField<Spec> member(std::string key) {
  using T = std::remove_cvref_t<decltype(member_of<Ms...>(std::declval<Spec&>()))>;
  KeyField<Spec> f;
  f.key = key;
  f.json_key = std::move(key);
  f.type = detail::key_type_of<T>();
  f.get = [](const Spec& s) { return KeyValue(member_of<Ms...>(s)); };
  f.set = [](Spec& s, const KeyValue& v) { member_of<Ms...>(s) = std::get<T>(v); };
  return f;
}

/// A key whose member is an enum (or a bool) spelled by the names of `names`.
template <class Spec, auto... Ms, class E, std::size_t N>
KeyField<Spec> choice(std::string key, const EnumNames<E, N>& names) {
  KeyField<Spec> f;
  f.key = key;
  f.json_key = std::move(key);
  f.type = KeyType::Name;
  f.names = enum_names_vector(names);
  f.get = [&names](const Spec& s) { return KeyValue(std::string(enum_name(names, member_of<Ms...>(s)))); };
  f.set = [&names](Spec& s, const KeyValue& v) {
    member_of<Ms...>(s) = *enum_from_name(names, std::get<std::string>(v));
  };
  return f;
}

/// A file unit other than the member's: the file states member · to_file_mul / to_file_div
/// and the member holds value · to_member_mul / to_member_div (two factors each way, so
/// that both conversions are the exact arithmetic a reader would write by hand).
struct FileUnit {
  const char* name;
  double to_file_mul, to_file_div, to_member_mul, to_member_div;
};
inline constexpr FileUnit kGbitPerS{"Gbit/s", 8, 1e9, 1e9, 8};  ///< member in bytes/s
inline constexpr FileUnit kMbitPerS{"Mbit/s", 8, 1e6, 1e6, 8};  ///< member in bytes/s
inline constexpr FileUnit kMicroseconds{"µs", 1e6, 1, 1e-6, 1}; ///< member in s
inline constexpr FileUnit kNanoseconds{"ns", 1e9, 1, 1e-9, 1};  ///< member in s

/// A number key stated in files in `u` while its double member holds another unit.
template <class Spec, auto... Ms>
KeyField<Spec> scaled(std::string key, const FileUnit& u) {
  KeyField<Spec> f = member<Spec, Ms...>(std::move(key));
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(member_of<Ms...>(std::declval<Spec&>()))>, double>,
                "a scaled key is a double member");
  f.unit = u.name;
  f.get = [u](const Spec& s) { return KeyValue(member_of<Ms...>(s) * u.to_file_mul / u.to_file_div); };
  f.set = [u](Spec& s, const KeyValue& v) {
    member_of<Ms...>(s) = std::get<double>(v) * u.to_member_mul / u.to_member_div;
  };
  return f;
}

/// The last part of a dotted key ("overlap.tp" → "tp") and the part before it.
inline std::string_view key_leaf(std::string_view key) {
  const auto dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}
inline std::string_view key_parent(std::string_view key) {
  const auto dot = key.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : key.substr(0, dot);
}

/// The lower bound of a number key that must be above zero: the key reference writes it
/// "(0, …" / "> 0", and so does the reader's range error.
inline constexpr double kAboveZero = 1e-300;

/// A number as the key reference and messages write it (shortest form that reads back).
inline std::string number_text(double x) {
  std::ostringstream os;
  os << std::setprecision(15) << x;
  return os.str();
}

/// A value as a TOML file would write it.
inline std::string key_value_text(const KeyValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return number_text(*d);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return "\"" + std::get<std::string>(v) + "\"";
}

/// The type and valid values in words: "integer ≥ 1", "number in [0, 0.999]",
/// "\"1f1b\" | \"interleaved\"".
template <class Spec>
std::string key_range_text(const KeyField<Spec>& f) {
  if (!f.values_doc.empty()) return f.values_doc;
  switch (f.type) {
  case KeyType::Integer: {
    constexpr auto lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
    if (f.int_min == lo && f.int_max == hi) return "integer";
    if (f.int_max == hi) return "integer ≥ " + std::to_string(f.int_min);
    return "integer in [" + std::to_string(f.int_min) + ", " + std::to_string(f.int_max) + "]";
  }
  case KeyType::Number:
    if (f.num_max == 1e300) {
      if (f.num_min == kAboveZero) return "number > 0";
      if (f.num_min == -1e300) return "number";
      return "number ≥ " + number_text(f.num_min);
    }
    if (f.num_min == kAboveZero) return "number in (0, " + number_text(f.num_max) + "]";
    return "number in [" + number_text(f.num_min) + ", " + number_text(f.num_max) + "]";
  case KeyType::Boolean: return "boolean";
  case KeyType::String: return "string";
  case KeyType::Name: {
    std::string out = f.accepts_bool ? "boolean or " : "";
    for (size_t i = 0; i < f.names.size(); ++i) out += (i ? " | \"" : "\"") + f.names[i] + "\"";
    return out;
  }
  }
  return "?";
}

} // namespace twinscale
