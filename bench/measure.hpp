// Shared helpers for benchmarks: wall clock and peak resident set size.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
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

/// Runs a benchmark's body: -h/--help prints `usage` and exits 0; an exception (a bad
/// preset, size or file) is one "NAME: error: …" line and exit status 2, never an abort.
template <class Body>
int guarded_main(int argc, char** argv, const char* usage, Body body) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      std::printf("usage: %s %s\n", argv[0], usage);
      return 0;
    }
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", argv[0], e.what());
    return 2;
  }
}

} // namespace twinscale::bench
