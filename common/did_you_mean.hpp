// "Did you mean …?" hints for misspelt keys and names: the nearest valid spelling within
// two edits. Header-only, below every layer.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace twinscale {

/// Levenshtein distance between a and b.
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

/// The candidate nearest to `text` within two edits (the first of equals), or "".
template <class Names>
std::string nearest_name(std::string_view text, const Names& candidates) {
  std::string best;
  size_t nearest = 3;
  for (const auto& c : candidates)
    if (const size_t d = edit_distance(c, text); d < nearest) nearest = d, best = std::string(c);
  return best;
}

} // namespace twinscale
