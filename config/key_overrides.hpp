// Command-line edits of a TOML document (a job or cluster file, a preset): `--set
// KEY=VALUE`, applied to the parsed document before it is read, so an edited key is
// checked exactly as if the file had said it (same ranges, same unknown-key errors).
#pragma once

#include <string>
#include <vector>

#include <toml++/toml.h>

namespace twinscale::config {

/// One `--set KEY=VALUE`. KEY is a dotted path ("parallel.tp", "schedule.overlap.tp");
/// VALUE is read as a TOML value — 4, 2.5, true, "text", [1, 2] — and, when it is not
/// one, as a bare string (`schedule.pipeline=interleaved`).
struct KeyOverride {
  std::vector<std::string> path; ///< KEY split at its dots
  std::string value;             ///< VALUE as written
  std::string text;              ///< the whole KEY=VALUE, for messages
  bool takes_text = false;       ///< the key takes text: a VALUE that is not a TOML string is text
  std::string key() const;       ///< the dotted KEY
};

/// "KEY=VALUE" → a KeyOverride; ConfigError naming `option` ("--set") and saying the form
/// otherwise (no '=', an empty key or key part, a key part with characters other than
/// letters, digits, '_' and '-').
KeyOverride parse_key_override(const std::string& text, const std::string& option = "--set");

/// VALUE as a TOML value, in a table under the key "v" (text when it is not a TOML value,
/// or when the key takes text and it is not a TOML string).
toml::table override_value(const KeyOverride& o);

/// Sets each override's key in `doc`, creating the tables on its path. A path through a
/// key that holds a value (not a table) is a ConfigError naming `option`, the override
/// and the key.
void apply_key_overrides(toml::table& doc, const std::vector<KeyOverride>& overrides,
                         const std::string& option = "--set");

/// " (with --set a=1, --set b=2)" for messages about an edited document; "" when none.
std::string overrides_note(const std::vector<KeyOverride>& overrides, const std::string& option = "--set");

} // namespace twinscale::config
