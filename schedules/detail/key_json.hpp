// A spec as a JSON object, written and read through its key table (common/key_schema.hpp):
// the writer writes each key its table says to write, the reader reads each key with the
// table's type, range and names, and refuses keys the table does not know.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/did_you_mean.hpp"
#include "common/key_schema.hpp"

namespace twinscale::schedules::detail {

/// The object at the dotted `path` below `root`, created on the way.
inline nlohmann::json& json_object_at(nlohmann::json& root, std::string_view path) {
  nlohmann::json* node = &root;
  while (!path.empty()) {
    const auto dot = path.find('.');
    node = &(*node)[std::string(path.substr(0, dot))];
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return *node;
}

template <class Spec>
nlohmann::json keys_to_json(const Spec& spec, const std::vector<KeyField<Spec>>& keys) {
  nlohmann::json out = nlohmann::json::object();
  const Spec defaults{};
  for (const KeyField<Spec>& f : keys) {
    if (f.json_key.empty()) continue;
    const KeyValue v = f.get(spec);
    if (f.json_write == JsonWrite::UnlessDefault && v == f.get(defaults)) continue;
    if (f.json_write == JsonWrite::When && !f.json_when(spec)) continue;
    nlohmann::json& parent = json_object_at(out, key_parent(f.json_key));
    std::visit([&](const auto& x) { parent[std::string(key_leaf(f.json_key))] = x; }, v);
  }
  return out;
}

/// One value of `f` read from `v` (at `here`, for messages); `fail(where, why)` throws.
template <class Spec, class Fail>
KeyValue key_from_json(const KeyField<Spec>& f, const nlohmann::json& v, const std::string& here, Fail&& fail) {
  const std::string got = std::string(", got ") + v.type_name();
  switch (f.type) {
  case KeyType::Boolean:
    if (!v.is_boolean()) fail(here, "expected true or false" + got);
    return v.get<bool>();
  case KeyType::Integer: {
    if (!v.is_number_integer()) fail(here, "expected an integer" + got);
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(f.int_max))
      fail(here, "expected " + key_range_text(f) + ", got " + v.dump());
    const auto x = v.get<int64_t>();
    if (x < f.int_min || x > f.int_max) fail(here, "expected " + key_range_text(f) + ", got " + v.dump());
    return x;
  }
  case KeyType::Number: {
    if (!v.is_number()) fail(here, "expected a number" + got);
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < f.num_min || x > f.num_max)
      fail(here, "expected a " + key_range_text(f) + ", got " + v.dump());
    return x;
  }
  case KeyType::String:
    if (!v.is_string()) fail(here, "expected a string" + got);
    return v.get<std::string>();
  case KeyType::Name: {
    if (f.accepts_bool && v.is_boolean()) return v.get<bool>() ? f.true_name : f.false_name;
    if (!v.is_string()) fail(here, "expected a string" + got);
    const auto text = v.get<std::string>();
    std::string valid;
    for (const auto& n : f.names) {
      if (n == text) return text;
      valid += (valid.empty() ? "" : ", ") + n;
    }
    fail(here, "unknown value \"" + text + "\"; valid: " + valid);
  }
  }
  fail(here, "internal error: a key of unknown type");
  return {};
}

/// Fails naming the first member of `obj` (at `where`) that is not in `known`, with the
/// nearest known name as a hint.
template <class Fail>
void refuse_unknown_keys(const nlohmann::json& obj, const std::string& where, const std::vector<std::string>& known,
                         Fail&& fail) {
  for (const auto& [k, v] : obj.items()) {
    if (std::find(known.begin(), known.end(), k) != known.end()) continue;
    const std::string near = nearest_name(known, k).value_or("");
    std::string list;
    for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
    fail(where + "." + k, "unknown key" + (near.empty() ? std::string() : "; did you mean \"" + near + "\"?") +
                              " (valid keys here: " + list + ")");
  }
}

/// Reads the keys of one section (its object `obj` at `where`) into `spec`.
template <class Spec, class Fail>
void read_json_section(const nlohmann::json& obj, const std::string& where, const KeySection& section,
                       const std::vector<KeySection>& sections, const std::vector<KeyField<Spec>>& keys, Spec& spec,
                       Fail&& fail) {
  std::vector<std::string> known;
  for (const KeyField<Spec>& f : keys) {
    if (f.json_key.empty() || key_parent(f.json_key) != section.json_key) continue;
    const std::string leaf(key_leaf(f.json_key));
    known.push_back(leaf);
    const auto it = obj.find(leaf);
    if (it == obj.end()) {
      if (f.json_required) fail(where, "missing \"" + leaf + "\"");
      continue;
    }
    f.set(spec, key_from_json(f, *it, where + "." + leaf, fail));
  }
  for (const KeySection& s : sections)
    if (!s.json_key.empty() && key_parent(s.json_key) == section.json_key) known.emplace_back(key_leaf(s.json_key));
  refuse_unknown_keys(obj, where, known, fail);
}

/// Reads `spec` from `root` (at `where`): every section's object, each key by its table.
template <class Spec, class Fail>
void keys_from_json(const nlohmann::json& root, const std::string& where, const std::vector<KeySection>& sections,
                    const std::vector<KeyField<Spec>>& keys, Spec& spec, Fail&& fail) {
  for (const KeySection& s : sections) {
    const nlohmann::json* obj = &root;
    std::string here = where;
    std::string_view path = s.json_key;
    bool absent = false;
    while (!path.empty() && !absent) {
      const auto dot = path.find('.');
      const std::string part(path.substr(0, dot));
      path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
      if (!obj->is_object()) fail(here, "expected an object");
      const auto it = obj->find(part);
      if (it == obj->end()) {
        if (s.json_required) fail(here, "missing \"" + part + "\"");
        absent = true;
        break;
      }
      obj = &*it;
      here += "." + part;
    }
    if (absent) continue;
    if (!obj->is_object()) fail(here, "expected an object");
    read_json_section(*obj, here, s, sections, keys, spec, fail);
  }
}

} // namespace twinscale::schedules::detail
