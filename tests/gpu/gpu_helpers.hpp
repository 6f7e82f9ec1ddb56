// Helpers of the GPU tests: skipping (exit 77: ctest's SKIP_RETURN_CODE for label gpu).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace twinscale::backend::test {

/// Ends the test process as SKIPPED: ctest runs one test case per process.
[[noreturn]] inline void skip(const std::string& why) {
  std::printf("SKIPPED: %s\n", why.c_str());
  std::fflush(stdout);
  std::_Exit(77);
}

} // namespace twinscale::backend::test
