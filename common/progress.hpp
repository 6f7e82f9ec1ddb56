// Progress with an ETA on stderr for long work (campaign seeds, checkpoint sweeps), shown
// only when stderr is a terminal: piped or redirected output stays byte-identical and
// silent. Header-only, below every layer; redraws at most 5 times a second.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace twinscale {

class Progress {
public:
  /// `what` names the work ("campaign seeds"); `total` units of it.
  Progress(std::string what, int64_t total)
      : what_(std::move(what)), total_(total), shown_(::isatty(STDERR_FILENO) == 1),
        start_(std::chrono::steady_clock::now()) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() {
    if (drawn_) std::fputc('\n', stderr);
  }

  bool shown() const { return shown_; }

  /// `done` of `total` units are finished.
  void update(int64_t done) {
    if (!shown_ || total_ <= 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (done < total_ && drawn_ && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double eta = done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(total_ - done) : 0;
    std::fprintf(stderr, "\r%s: %lld/%lld (%.0f %%), %.0f s elapsed, ETA %.0f s   ", what_.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total_),
                 100.0 * static_cast<double>(done) / static_cast<double>(total_), elapsed, eta);
    std::fflush(stderr);
    drawn_ = true;
  }

private:
  std::string what_;
  int64_t total_;
  bool shown_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

} // namespace twinscale
