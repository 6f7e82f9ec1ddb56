// "Did you mean" hints for misspelt names (keys of TOML and JSON documents): the edit
// distance between two names and the nearest of a set of valid names. One helper, so a
// TOML table and a JSON object suggest the same way. Header-only, below every layer.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace twinscale {

/// Levenshtein distance between `a` and `b` (insertions, deletions, substitutions).
inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

/// The name in `valid` nearest to `got`, if one is within `max_edits` edits (the first
/// such in `valid`'s order on a tie).
template <class Names>
std::optional<std::string> nearest_name(const Names& valid, std::string_view got, size_t max_edits = 2) {
  std::optional<std::string> best;
  size_t nearest = max_edits + 1;
  for (const auto& name : valid)
    if (const size_t d = edit_distance(name, got); d < nearest) {
      nearest = d;
      best = std::string(name);
    }
  return best;
}

} // namespace twinscale
