#include "config/key_overrides.hpp"

#include <sstream>

#include "config/error.hpp"

namespace twinscale::config {

std::string KeyOverride::key() const {
  std::string out;
  for (const auto& p : path) out += (out.empty() ? "" : ".") + p;
  return out;
}

KeyOverride parse_key_override(const std::string& text, const std::string& option) {
  const std::string form =
      "; expected KEY=VALUE, e.g. " + option + " parallel.tp=4 or " + option + " schedule.pipeline=interleaved";
  const auto eq = text.find('=');
  if (eq == std::string::npos) throw ConfigError(option + " '" + text + "': no '='" + form);
  KeyOverride o;
  o.text = text;
  o.value = text.substr(eq + 1);
  std::stringstream key(text.substr(0, eq));
  std::string part;
  while (std::getline(key, part, '.')) {
    if (part.empty()) throw ConfigError(option + " '" + text + "': an empty part in the key" + form);
    for (char c : part)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'))
        throw ConfigError(option + " '" + text + "': the key part '" + part +
                          "' holds a character other than letters, digits, '_' and '-'" + form);
    o.path.push_back(part);
  }
  if (o.path.empty() || text[eq - 1] == '.') throw ConfigError(option + " '" + text + "': no key" + form);
  return o;
}

toml::table override_value(const KeyOverride& o) {
  try {
    toml::table t = toml::parse("v = " + o.value);
    if (!o.takes_text || t.get("v")->is_string()) return t;
  } catch (const toml::parse_error&) {}
  toml::table t;
  t.insert("v", o.value);
  return t;
}

void apply_key_overrides(toml::table& doc, const std::vector<KeyOverride>& overrides, const std::string& option) {
  for (const KeyOverride& o : overrides) {
    toml::table* t = &doc;
    std::string walked;
    for (size_t i = 0; i + 1 < o.path.size(); ++i) {
      walked += (walked.empty() ? "" : ".") + o.path[i];
      toml::node* n = t->get(o.path[i]);
      if (n == nullptr) n = &t->insert(o.path[i], toml::table{}).first->second;
      if (!n->is_table())
        throw ConfigError(option + " " + o.text + ": key '" + walked + "' holds a value, not a table of keys");
      t = n->as_table();
    }
    toml::table value = override_value(o);
    t->insert_or_assign(o.path.back(), std::move(*value.get("v")));
  }
}

std::string overrides_note(const std::vector<KeyOverride>& overrides, const std::string& option) {
  if (overrides.empty()) return "";
  std::string out;
  for (const KeyOverride& o : overrides) out += (out.empty() ? " (with " : ", ") + option + " " + o.text;
  return out + ")";
}

} // namespace twinscale::config
