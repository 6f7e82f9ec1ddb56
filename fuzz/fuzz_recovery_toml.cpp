// libFuzzer harness: recovery + checkpoint policy files (config/recovery_file.cpp).
#include "config/recovery_file.hpp"
#include "fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  twinscale::fuzz::expect_clean_rejection(
      [&] { twinscale::config::parse_recovery(twinscale::fuzz::as_text(data, size), "fuzz.toml"); });
  return 0;
}
