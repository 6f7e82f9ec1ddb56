// Progress of long work (simulated ops, sweep points, campaign seeds, probe measurements)
// on stderr. On a terminal: one redrawn line with a bar, done/total, rate and ETA, at most
// 5 redraws a second. Otherwise (a log, CI, `| tee`): one plain line every
// line_interval_s (10 s; the environment variable TWINSCALE_PROGRESS_INTERVAL_S changes
// it, 0 = a line at every update) with the same figures, so a long run never goes silent.
// stdout is never touched. The process-wide settings (progress_settings()) silence it
// (--quiet, MPI ranks other than 0). Header-only, below every layer.
//
// The ETA is the work left divided by the recent rate: done units over the time since an
// earlier update (at most about 30 s back), never counting the time before the first
// update (setup, which would inflate the rate's denominator and the ETA with it).
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace twinscale {

/// Process-wide settings, set once by the command line before any work starts.
struct ProgressSettings {
  bool quiet = false; ///< no progress at all (--quiet; ranks other than 0 of an MPI run)
  /// Terminal or plain lines: -1 decided by isatty(stderr), 0 plain lines, 1 terminal.
  int terminal = -1;
};

inline ProgressSettings& progress_settings() {
  static ProgressSettings settings;
  return settings;
}

/// Seconds between plain progress lines: TWINSCALE_PROGRESS_INTERVAL_S when set to a
/// number ≥ 0, else 10.
inline double progress_line_interval_s() {
  if (const char* v = std::getenv("TWINSCALE_PROGRESS_INTERVAL_S")) {
    char* end = nullptr;
    const double s = std::strtod(v, &end);
    if (end != v && *end == '\0' && s >= 0 && s < 1e9) return s;
  }
  return 10;
}

/// "42 s", "3m07s", "2h05m".
inline std::string progress_duration(double s) {
  char buf[32];
  if (!(s >= 0) || s > 1e9) return "?";
  if (s < 90)
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  else if (s < 5400)
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600, (static_cast<int>(s) / 60) % 60);
  return buf;
}

class Progress {
public:
  /// `what` names the work ("simulated ops"); `total` units of it; `unit` for the rate
  /// ("ops" → "1234 ops/s").
  Progress(std::string what, int64_t total, std::string unit = "")
      : what_(std::move(what)), unit_(std::move(unit)), total_(total), shown_(!progress_settings().quiet && total > 0),
        terminal_(progress_settings().terminal >= 0 ? progress_settings().terminal == 1 : ::isatty(STDERR_FILENO) == 1),
        interval_s_(progress_line_interval_s()), start_(now()) {
    last_line_ = start_;
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { finish(); }

  /// Whether anything is shown (not quiet, something to do).
  bool shown() const { return shown_; }

  /// Text appended to each report (", best MFU 41.2 %").
  void set_note(std::string note) { note_ = std::move(note); }

  /// `done` of `total` units are finished.
  void update(int64_t done) { update_at(done, now()); }

  /// As update, at `t` (seconds on the clock of start_s(); for tests of the estimator).
  void update_at(int64_t done, double t) {
    if (!shown_) return;
    note_rate_sample(t, done);
    done_ = done;
    if (terminal_) {
      if (done < total_ && drawn_ && t - last_draw_ < 0.2) return;
      last_draw_ = t;
      std::fprintf(stderr, "\r%s\033[K", line(t, true).c_str());
      std::fflush(stderr);
      drawn_ = true;
      return;
    }
    if (t - last_line_ < interval_s_) return;
    last_line_ = t;
    lines_ = true;
    std::fprintf(stderr, "%s\n", line(t, false).c_str());
    std::fflush(stderr);
  }

  /// Ends the report (called by the destructor): the terminal line is closed; after plain
  /// lines, one last line with the final count and time.
  void finish() {
    if (finished_ || !shown_) return;
    finished_ = true;
    if (drawn_) std::fputc('\n', stderr);
    if (lines_)
      std::fprintf(stderr, "%s: %lld/%lld done in %s\n", what_.c_str(), static_cast<long long>(done_),
                   static_cast<long long>(total_), progress_duration(now() - start_).c_str());
  }

  /// When the work started (construction), in the clock of update_at.
  double start_s() const { return start_; }

  /// Seconds left at the current rate; -1 when unknown (nothing done yet).
  double eta_s() const {
    if (done_ >= total_) return 0;
    const double r = rate();
    return r > 0 ? static_cast<double>(total_ - done_) / r : -1;
  }

  /// The rate (units per second) the ETA uses: since an earlier update; at the first
  /// update, since the start (nothing better is known yet); 0 when nothing is done.
  double rate() const {
    const Sample& base = samples_[oldest()];
    if (count_ >= 2 && done_ > base.done && last_t_ > base.t)
      return static_cast<double>(done_ - base.done) / (last_t_ - base.t);
    return done_ > 0 && last_t_ > start_ ? static_cast<double>(done_) / (last_t_ - start_) : 0;
  }

private:
  struct Sample {
    double t = 0;
    int64_t done = 0;
  };
  static constexpr size_t kSamples = 16;    // ring of past updates, one kept every ≥ 2 s
  static constexpr double kSampleGap = 2.0; // so the rate covers the last ~30 s

  static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  size_t oldest() const { return count_ < kSamples ? 0 : next_ % kSamples; }

  void note_rate_sample(double t, int64_t done) {
    last_t_ = t;
    const size_t newest = (next_ + kSamples - 1) % kSamples;
    if (count_ > 0 && t - samples_[newest].t < kSampleGap && count_ >= 2) return;
    samples_[next_ % kSamples] = {t, done};
    ++next_;
    ++count_;
  }

  std::string line(double t, bool bar) const {
    const double r = rate();
    const double frac = static_cast<double>(done_) / static_cast<double>(total_);
    std::string out = what_ + " ";
    if (bar) {
      constexpr int kWidth = 24;
      const int full = static_cast<int>(frac * kWidth + 1e-9);
      const auto hashes = static_cast<size_t>(std::clamp(full, 0, kWidth));
      out += '[';
      out.append(hashes, '#');
      out.append(static_cast<size_t>(kWidth) - hashes, '.');
      out += "] ";
    }
    char buf[256];
    std::snprintf(buf, sizeof buf, "%lld/%lld (%.0f %%), ", static_cast<long long>(done_),
                  static_cast<long long>(total_), 100.0 * frac);
    out += buf;
    if (r > 0)
      std::snprintf(buf, sizeof buf, "%.3g %s/s, ", r, unit_.empty() ? "units" : unit_.c_str());
    else
      std::snprintf(buf, sizeof buf, "rate ?, ");
    out += buf;
    out += progress_duration(t - start_) + " elapsed, ETA " + progress_duration(eta_s()) + note_;
    return out;
  }

  std::string what_, unit_, note_;
  int64_t total_;
  bool shown_, terminal_;
  double interval_s_;
  double start_, last_line_, last_draw_ = 0, last_t_ = 0;
  bool drawn_ = false, lines_ = false, finished_ = false;
  int64_t done_ = 0;
  std::array<Sample, kSamples> samples_{};
  size_t next_ = 0, count_ = 0;
};

} // namespace twinscale
