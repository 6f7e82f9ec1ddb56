// Shared by the libFuzzer harnesses: the error policy they check. A reader may reject
// any input with a typed error (a std::runtime_error: ConfigError, JobError,
// ScheduleError, FaultError, InputFileError…); an internal assertion (std::logic_error,
// TWINSCALE_ASSERT) or any other exception is a bug and aborts, as do the sanitizers'
// findings, crashes, hangs (-timeout) and excess memory (-rss_limit_mb).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace twinscale::fuzz {

template <class F>
void expect_clean_rejection(F&& body) {
  try {
    body();
  } catch (const std::logic_error& e) {
    std::fprintf(stderr, "internal error (a bug): %s\n", e.what());
    std::abort();
  } catch (const std::runtime_error&) {
    // a clear, typed rejection of bad input: fine
  } catch (const std::exception& e) {
    std::fprintf(stderr, "untyped exception (a bug): %s\n", e.what());
    std::abort();
  }
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// A private folder for the harnesses that read files (run directories, checkpoints,
/// SQLite stores): made once per process under $TMPDIR (or /tmp) and removed at exit.
inline const std::filesystem::path& scratch_dir() {
  // never destroyed: the exit handler below still needs it after static destructors ran
  static const std::filesystem::path* const dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/twinscale-fuzz-XXXXXX";
    if (!mkdtemp(pattern.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    return new std::filesystem::path(pattern);
  }();
  static const bool cleanup = [] {
    return std::atexit([] {
             std::error_code ec;
             std::filesystem::remove_all(*dir, ec);
           }) == 0;
  }();
  (void)cleanup;
  return *dir;
}

/// Writes `size` bytes of `data` to `path` (creating its folder), replacing the file.
inline void write_input(const std::filesystem::path& path, const uint8_t* data, size_t size) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) {
    std::fprintf(stderr, "cannot write the fuzz input to %s\n", path.c_str());
    std::abort();
  }
}

} // namespace twinscale::fuzz
