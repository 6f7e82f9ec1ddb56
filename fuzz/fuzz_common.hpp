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

} // namespace twinscale::fuzz
