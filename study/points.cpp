#include "study/points.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "config/error.hpp"

namespace twinscale::study {

namespace {

constexpr auto kMaxGridPoints = static_cast<uint64_t>(kMaxStudyPoints);

/// splitmix64 (Steele, Lea, Flood 2014): a fixed generator, so samples are the same on
/// every platform (std:: distributions are implementation-defined).
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

Point decode(const StudySpec& spec, uint64_t index) {
  Point p;
  // Mixed radix, last axis fastest (the grid order of nested loops).
  std::vector<size_t> digit(spec.axes.size());
  for (size_t k = spec.axes.size(); k-- > 0;) {
    const uint64_t n = spec.axes[k].values.size();
    digit[k] = static_cast<size_t>(index % n);
    index /= n;
  }
  for (size_t k = 0; k < spec.axes.size(); ++k) p.values.emplace_back(spec.axes[k].name, spec.axes[k].values[digit[k]]);
  return p;
}

nlohmann::ordered_json value_json(const Value& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* b = std::get_if<bool>(&v)) return *b;
  return std::get<std::string>(v);
}

} // namespace

const Value* Point::find(const std::string& axis) const {
  for (const auto& [name, value] : values)
    if (name == axis) return &value;
  return nullptr;
}

std::vector<Point> generate_points(const StudySpec& spec) {
  uint64_t total = 1;
  bool huge = false;
  for (const auto& a : spec.axes) {
    if (total > (UINT64_MAX >> 2) / a.values.size())
      huge = true;
    else
      total *= a.values.size();
  }
  std::vector<Point> out;
  Rng rng{spec.sample_seed};
  switch (spec.method) {
  case SampleMethod::Grid:
    if (huge || total > kMaxGridPoints)
      throw config::ConfigError(spec.file + ": key 'axes' spans " +
                                (huge ? std::string("more than 2^62") : std::to_string(total)) +
                                " grid points (limit " + std::to_string(kMaxGridPoints) +
                                "); use [sample] method = \"random\" or \"lhs\" with points = N");
    for (uint64_t i = 0; i < total; ++i) out.push_back(decode(spec, i));
    break;
  case SampleMethod::Random: {
    const uint64_t n = static_cast<uint64_t>(spec.points);
    if (huge)
      throw config::ConfigError(spec.file + ": key 'axes' spans more than 2^62 points; use [sample] method = \"lhs\"");
    if (n > total)
      throw config::ConfigError(spec.file + ": key 'sample.points' is " + std::to_string(n) +
                                " but the axes span only " + std::to_string(total) +
                                " distinct points; use at most that many (or method = \"grid\")");
    // Floyd's algorithm: n distinct indices of [0, total), then grid order.
    std::set<uint64_t> chosen;
    for (uint64_t j = total - n; j < total; ++j) {
      const uint64_t t = rng.below(j + 1);
      if (!chosen.insert(t).second) chosen.insert(j);
    }
    for (uint64_t i : chosen) out.push_back(decode(spec, i));
    break;
  }
  case SampleMethod::LatinHypercube: {
    const size_t n = static_cast<size_t>(spec.points);
    std::vector<std::vector<size_t>> index(spec.axes.size(), std::vector<size_t>(n));
    for (size_t k = 0; k < spec.axes.size(); ++k) {
      std::vector<size_t> perm(n);
      for (size_t i = 0; i < n; ++i) perm[i] = i;
      for (size_t i = n; i-- > 1;) std::swap(perm[i], perm[static_cast<size_t>(rng.below(i + 1))]); // Fisher–Yates
      const size_t m = spec.axes[k].values.size();
      for (size_t i = 0; i < n; ++i) {
        const double u = (static_cast<double>(perm[i]) + rng.unit()) / static_cast<double>(n);
        index[k][i] = std::min(m - 1, static_cast<size_t>(u * static_cast<double>(m)));
      }
    }
    std::set<std::vector<size_t>> seen;
    for (size_t i = 0; i < n; ++i) {
      std::vector<size_t> row(spec.axes.size());
      for (size_t k = 0; k < spec.axes.size(); ++k) row[k] = index[k][i];
      if (!seen.insert(row).second) continue; // discrete axes: a repeated row is dropped
      Point p;
      for (size_t k = 0; k < spec.axes.size(); ++k)
        p.values.emplace_back(spec.axes[k].name, spec.axes[k].values[row[k]]);
      out.push_back(std::move(p));
    }
    break;
  }
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].id = static_cast<int64_t>(i);
  return out;
}

std::string inputs_json(const Point& p) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, value] : p.values) j[name] = value_json(value);
  return j.dump();
}

std::string fingerprint(const StudySpec& s, const std::vector<Point>& points) {
  nlohmann::ordered_json j;
  j["name"] = s.name;
  j["base"] = {{"job", s.job},
               {"cluster", s.cluster},
               {"gpus", s.gpus},
               {"global_batch", s.global_batch},
               {"placement", s.placement},
               {"seed", s.seed}};
  j["sample"] = {{"method", static_cast<int>(s.method)}, {"points", s.points}, {"seed", s.sample_seed}};
  j["filters"] = {{"memory_fits", s.memory_fits}};
  j["evaluate"] = {
      {"what", static_cast<int>(s.evaluation)}, {"mode", static_cast<int>(s.mode)}, {"flow_best", s.flow_best}};
  if (s.evaluation == Evaluation::Campaign)
    j["campaign"] = {{"faults", s.faults},
                     {"recovery", s.recovery},
                     {"days", s.days},
                     {"seeds", s.seeds},
                     {"seed", s.campaign_seed}};
  std::string text = j.dump();
  for (const auto& p : points) text += "\n" + inputs_json(p);
  uint64_t h = 0xcbf29ce484222325ULL; // FNV-1a 64
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

} // namespace twinscale::study
