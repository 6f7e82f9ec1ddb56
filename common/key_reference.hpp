// The key reference (docs/keys.md) rendered from a spec's key table: one Markdown table
// per section, one row per key with its type and valid values, unit, default and doc.
#pragma once

#include <string>
#include <vector>

#include "common/key_schema.hpp"

namespace twinscale {

namespace detail {
inline std::string markdown_cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else
      out += c;
  }
  return out;
}

template <class Spec>
std::string key_default_text(const KeyField<Spec>& f, const Spec& defaults) {
  if (f.required) return "required";
  if (!f.default_doc.empty()) return f.default_doc;
  if (!f.get) return "—";
  return key_value_text(f.get(defaults));
}
} // namespace detail

/// The Markdown section of one spec: `title` as a level-2 heading, `intro`, then a table
/// per section of the keys that files take (JSON-only keys are left out). `defaults`: what a
/// file that leaves a key out gets, where that is not the spec's own default.
template <class Spec>
std::string key_reference_markdown(const std::string& title, const std::string& intro,
                                   const std::vector<KeySection>& sections, const std::vector<KeyField<Spec>>& keys,
                                   const Spec& defaults = Spec{}) {
  std::string out = "## " + title + "\n\n" + intro + "\n";
  for (const KeySection& s : sections) {
    out += "\n### " + (s.key.empty() ? std::string("Top level") : "[" + s.key + "]") + "\n\n" + s.doc +
           (s.required ? " Required." : "") + "\n\n";
    out += "| key | type and values | unit | default | meaning |\n|---|---|---|---|---|\n";
    for (const KeyField<Spec>& f : keys) {
      if (f.key.empty() || key_parent(f.key) != s.key) continue;
      std::string doc = f.doc;
      if (!f.applies_doc.empty()) doc += "; only with " + f.applies_doc;
      if (f.stack) doc += "; a software stack may set it";
      out += "| `" + f.key + "` | " + detail::markdown_cell(key_range_text(f)) + " | " + f.unit + " | " +
             detail::markdown_cell(detail::key_default_text(f, defaults)) + " | " + detail::markdown_cell(doc) + " |\n";
    }
  }
  return out;
}

} // namespace twinscale
