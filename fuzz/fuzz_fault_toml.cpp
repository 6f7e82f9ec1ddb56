// libFuzzer harness: fault models and fault plans (config/fault_file.cpp). The first
// byte picks the reader, the rest is the file.
#include "config/fault_file.hpp"
#include "fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto text = twinscale::fuzz::as_text(data + 1, size - 1);
  twinscale::fuzz::expect_clean_rejection([&] {
    if (data[0] & 1)
      twinscale::config::parse_fault_plan(text, "fuzz.toml");
    else
      twinscale::config::parse_fault_model(text, "fuzz.toml");
  });
  return 0;
}
