// libFuzzer harness: trace files (schedules/trace.cpp).
#include <sstream>

#include "fuzz/fuzz_common.hpp"
#include "schedules/trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  twinscale::fuzz::expect_clean_rejection([&] {
    std::istringstream in(std::string(twinscale::fuzz::as_text(data, size)));
    for (const auto& r : twinscale::schedules::read_chrome_trace(in, "fuzz.json"))
      if (r.duration_s < 0 || r.start_s < 0 || r.rank < 0) std::abort(); // the reader's promise
  });
  return 0;
}
