// The points of a study: every combination of the axes (grid), a seeded sample without
// replacement (random) or a Latin hypercube (lhs). Same study, same points, same ids.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "study/study_spec.hpp"

namespace twinscale::study {

struct Point {
  int64_t id = 0;                                    // 0 … points − 1, stable
  std::vector<std::pair<std::string, Value>> values; // one per axis, canonical order

  const Value* find(const std::string& axis) const;
};

/// Throws config::ConfigError (naming the study file and [sample]) when a grid has more
/// than 10^7 points or a random sample asks for more points than the grid holds.
std::vector<Point> generate_points(const StudySpec& spec);

/// The point's axis values as a JSON object in canonical order, e.g. {"tp":8,"pp":16}.
std::string inputs_json(const Point& p);

/// A digest of everything that decides the study's rows (base, sampling, axes, filters,
/// evaluation and every point): a store made by a different study is refused.
std::string fingerprint(const StudySpec& spec, const std::vector<Point>& points);

} // namespace twinscale::study
