// Reading a spec's keys from TOML through its key table (common/key_schema.hpp): each key
// with the table's type, range and value names, through TableReader, so that messages
// name the file and the full key and say what is valid.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/key_schema.hpp"
#include "config/toml_reader.hpp"

namespace twinscale::config {

/// Reads key `f` from `t` (the table of its section) into `spec`; absent, the key keeps
/// the value `spec` holds (its default, or a software stack's), unless it is `required`
/// (by default f.required; a reader passes its own where another key decides).
template <class Spec>
void read_key(TableReader& t, const KeyField<Spec>& f, Spec& spec, std::optional<bool> required = std::nullopt) {
  const std::string_view leaf = key_leaf(f.key);
  const KeyValue now = f.get(spec);
  const bool must = required.value_or(f.required);
  const auto fallback = [&](auto value) { return must ? std::nullopt : std::optional(value); };
  switch (f.type) {
  case KeyType::Integer: f.set(spec, t.get_int(leaf, fallback(std::get<int64_t>(now)), f.int_min, f.int_max)); return;
  case KeyType::Number: f.set(spec, t.get_double(leaf, fallback(std::get<double>(now)), f.num_min, f.num_max)); return;
  case KeyType::Boolean: f.set(spec, t.get_bool(leaf, fallback(std::get<bool>(now)))); return;
  case KeyType::String: f.set(spec, t.get_string(leaf, fallback(std::get<std::string>(now)))); return;
  case KeyType::Name: {
    if (f.accepts_bool && t.has(leaf) && !t.holds_string(leaf)) {
      f.set(spec, t.get_bool(leaf) ? f.true_name : f.false_name);
      return;
    }
    const std::string got = t.get_string(leaf, fallback(std::get<std::string>(now)));
    std::string valid;
    for (const std::string& n : f.names) {
      if (n == got) {
        f.set(spec, got);
        return;
      }
      valid += (valid.empty() ? "" : ", ") + n;
    }
    t.fail(leaf, "is \"" + got + "\"; valid values: " + valid);
  }
  }
}

/// Reads the keys of `section` ("schedule"; "" = the top level) from its table `t`, in
/// table order, but not those read by hand. `stack_only`: only those a software stack may state.
template <class Spec>
void read_keys(TableReader& t, std::string_view section, const std::vector<KeyField<Spec>>& keys, Spec& spec,
               bool stack_only = false) {
  for (const KeyField<Spec>& f : keys)
    if (!f.key.empty() && !f.by_hand && key_parent(f.key) == section && (f.stack || !stack_only)) read_key(t, f, spec);
}

/// Refuses a key of `section` that `t` states where it does not apply (KeyField::applies).
template <class Spec>
void check_applies(const TableReader& t, std::string_view section, const std::vector<KeyField<Spec>>& keys,
                   const Spec& spec) {
  for (const KeyField<Spec>& f : keys)
    if (!f.key.empty() && f.applies != nullptr && key_parent(f.key) == section && t.has(key_leaf(f.key)) &&
        !f.applies(spec))
      t.fail(key_leaf(f.key), f.applies_why);
}

/// read_keys of `section`, then each sub-table of `sections` below it (read the same way
/// and finished), then check_applies (not for a stack, which states facts, not choices).
/// The caller reads the keys read by hand and finishes `t`.
template <class Spec>
void read_section(TableReader& t, std::string_view section, const std::vector<KeySection>& sections,
                  const std::vector<KeyField<Spec>>& keys, Spec& spec, bool stack_only = false) {
  read_keys(t, section, keys, spec, stack_only);
  for (const KeySection& s : sections) {
    if (s.key.empty() || key_parent(s.key) != section) continue;
    TableReader sub = t.table(key_leaf(s.key), s.required && !stack_only);
    read_section(sub, s.key, sections, keys, spec, stack_only);
    sub.finish();
  }
  if (!stack_only) check_applies(t, section, keys, spec);
}

} // namespace twinscale::config
