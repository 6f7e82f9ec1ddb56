// Shared helpers for benchmarks: wall clock and peak resident set size.
#pragma once

#include <chrono>
#include <cstdio>
#include <sys/resource.h>

namespace twinscale::bench {

inline double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0; // Linux: KiB
}

class Stopwatch {
public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

private:
  std::chrono::steady_clock::time_point start_;
};

/// One result line: "bench <name>: <value> <unit>" (grep-able, stable format).
inline void report(const char* name, double value, const char* unit) {
  std::printf("bench %-40s %14.4f %s\n", name, value, unit);
}

} // namespace twinscale::bench
