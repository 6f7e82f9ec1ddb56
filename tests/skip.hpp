// Skipped tests say so. Catch2 2.13 (Debian 12) has no SKIP macro, so a test case that
// cannot run here (no mpirun, no redis-server, no GPU) calls TWINSCALE_SKIP(reason): the
// reason is printed, the test case returns, and when every test case the executable ran
// skipped (ctest runs one per process) it exits with kSkipReturnCode, which
// tests/CMakeLists.txt gives ctest as SKIP_RETURN_CODE — so ctest reports "Skipped", not
// "Passed"; run outside ctest, the later test cases still run. Defined in
// tests/catch_session.cpp.
#pragma once

#include <string>

#include <catch2/catch.hpp>

namespace twinscale::test {

constexpr int kSkipReturnCode = 77;

// A build with AddressSanitizer (scripts/sanitize.sh): its shadow memory cannot be mapped
// under `ulimit -v`, and its MPI ranks run several times slower than the time bounds of
// the hang tests assume; those tests skip there, saying why.
#if defined(__SANITIZE_ADDRESS__)
#define TWINSCALE_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TWINSCALE_TEST_ASAN 1
#endif
#endif
#ifndef TWINSCALE_TEST_ASAN
#define TWINSCALE_TEST_ASAN 0
#endif
inline constexpr bool kAddressSanitizer = TWINSCALE_TEST_ASAN != 0;

/// Counts the current test case as skipped (the macro below is the way to call it).
void note_skipped(const std::string& reason);

/// Runs Catch2's session: its result, or kSkipReturnCode when every test case skipped.
int run_session(int argc, char** argv);

} // namespace twinscale::test

#define TWINSCALE_SKIP(reason)                                                                                         \
  do {                                                                                                                 \
    WARN("SKIPPED: " << (reason));                                                                                     \
    ::twinscale::test::note_skipped(reason);                                                                           \
    return;                                                                                                            \
  } while (0)
