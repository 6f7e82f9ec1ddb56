#include "config/gpu_speeds.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "config/error.hpp"
#include "schedules/input_file.hpp"
#include "schedules/limits.hpp"

namespace twinscale::config {

namespace {

/// SplitMix64: a fixed, portable stream (std:: distributions differ between libraries).
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; } // [0, 1)
  double normal() {
    const double u1 = 1.0 - uniform(); // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string piece;
  while (std::getline(ss, piece, sep)) out.push_back(piece);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  const auto b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

bool parse_double(const std::string& text, double& out) {
  try {
    size_t used = 0;
    out = std::stod(text, &used);
    return used == text.size() && std::isfinite(out);
  } catch (const std::exception&) {
    return false;
  }
}

/// The valid range of a GPU speed factor, for messages.
std::string speed_range() {
  std::ostringstream r;
  r << schedules::kMinGpuSpeedFactor << ", " << schedules::kMaxGpuSpeedFactor;
  return r.str();
}

bool parse_int(const std::string& text, int64_t& out) {
  try {
    size_t used = 0;
    out = std::stoll(text, &used);
    return used == text.size();
  } catch (const std::exception&) {
    return false;
  }
}

} // namespace

std::vector<double> draw_gpu_speeds(const std::string& spec, int64_t gpus, uint64_t seed) {
  const std::string valid = " (valid: normal:SIGMA, uniform:LO:HI, lognormal:SIGMA; e.g. normal:0.02)";
  const auto parts = split(spec, ':');
  std::vector<double> p;
  for (size_t i = 1; i < parts.size(); ++i) {
    double v = 0;
    if (!parse_double(trim(parts[i]), v))
      throw ConfigError("--gpu-speed-dist '" + spec + "': '" + parts[i] + "' is not a number" + valid);
    p.push_back(v);
  }
  const std::string kind = parts.empty() ? "" : parts[0];
  SplitMix64 rng{seed};
  std::vector<double> out(static_cast<size_t>(gpus), 1.0);
  if ((kind == "normal" || kind == "lognormal") && p.size() == 1) {
    if (!(p[0] >= 0 && p[0] <= 1)) throw ConfigError("--gpu-speed-dist '" + spec + "': SIGMA must be in [0, 1]");
    for (auto& f : out) {
      const double z = rng.normal();
      f = kind == "normal" ? std::clamp(1.0 + p[0] * z, 0.05, 2.0) : std::exp(p[0] * z);
    }
    return out;
  }
  if (kind == "uniform" && p.size() == 2) {
    if (!(p[0] >= schedules::kMinGpuSpeedFactor && p[1] >= p[0] && p[1] <= schedules::kMaxGpuSpeedFactor))
      throw ConfigError("--gpu-speed-dist '" + spec + "': need LO ≤ HI, both speed factors in [" + speed_range() + "]");
    for (auto& f : out) f = p[0] + (p[1] - p[0]) * rng.uniform();
    return out;
  }
  throw ConfigError("--gpu-speed-dist '" + spec + "' is not a distribution" + valid);
}

std::vector<double> parse_gpu_speeds(const std::string& text, const std::string& source, const topology::Fabric& fabric,
                                     const std::vector<int64_t>& gpu_of_rank) {
  std::vector<double> out(static_cast<size_t>(fabric.gpus()), 1.0);
  std::stringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    const std::string where = source + ":" + std::to_string(lineno) + ": ";
    const auto f = split(line, ',');
    if (f.size() != 3)
      throw ConfigError(where + "'" + line + "' has " + std::to_string(f.size()) +
                        " fields (valid: scope,index,factor with scope rank, gpu or server)");
    const std::string scope = trim(f[0]), idx = trim(f[1]), fac = trim(f[2]);
    if (scope == "scope" && idx == "index" && fac == "factor") continue; // header
    int64_t index = 0;
    double factor = 0;
    if (!parse_int(idx, index)) throw ConfigError(where + "index '" + idx + "' is not an integer");
    if (!parse_double(fac, factor) || !(factor >= schedules::kMinGpuSpeedFactor) ||
        !(factor <= schedules::kMaxGpuSpeedFactor))
      throw ConfigError(where + "factor '" + fac + "' is not a number in [" + speed_range() +
                        "] (1 = nominal speed, 0.8 = 20 % slower)");
    if (scope == "rank") {
      if (index < 0 || index >= static_cast<int64_t>(gpu_of_rank.size()))
        throw ConfigError(where + "rank " + idx + " outside 0.." + std::to_string(gpu_of_rank.size() - 1));
      out[static_cast<size_t>(gpu_of_rank[static_cast<size_t>(index)])] *= factor;
    } else if (scope == "gpu") {
      if (index < 0 || index >= fabric.gpus())
        throw ConfigError(where + "gpu " + idx + " outside 0.." + std::to_string(fabric.gpus() - 1));
      out[static_cast<size_t>(index)] *= factor;
    } else if (scope == "server") {
      if (index < 0 || index >= fabric.servers())
        throw ConfigError(where + "server " + idx + " outside 0.." + std::to_string(fabric.servers() - 1));
      for (int64_t g = 0; g < fabric.gpus(); ++g)
        if (fabric.server_of_gpu(g) == index) out[static_cast<size_t>(g)] *= factor;
    } else {
      throw ConfigError(where + "scope '" + scope + "' (valid: rank, gpu, server)");
    }
  }
  for (size_t g = 0; g < out.size(); ++g) // entries that hit one GPU multiply: the product is bounded too
    if (!(out[g] >= schedules::kMinGpuSpeedFactor && out[g] <= schedules::kMaxGpuSpeedFactor)) {
      std::ostringstream v;
      v << out[g];
      throw ConfigError(source + ": GPU " + std::to_string(g) + " gets factor " + v.str() +
                        ", the product of the entries naming it (its rank, GPU and server); a GPU's factor must be "
                        "in [" +
                        speed_range() + "]");
    }
  return out;
}

std::vector<double> read_gpu_speed_file(const std::string& path, const topology::Fabric& fabric,
                                        const std::vector<int64_t>& gpu_of_rank) {
  std::string text;
  try { // a regular file of bounded size: /dev/zero, a FIFO or a directory is refused, not read
    text = schedules::read_input_file(path, "GPU speed file", schedules::InputKind::Csv);
  } catch (const schedules::InputFileError& e) {
    throw ConfigError(e.what());
  }
  return parse_gpu_speeds(text, path, fabric, gpu_of_rank);
}

} // namespace twinscale::config
