// libFuzzer harness: calibration tables (schedules/calibration.cpp). An accepted table is
// written and read back to the same bytes.
#include <sstream>

#include "fuzz/fuzz_common.hpp"
#include "schedules/calibration.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace s = twinscale::schedules;
  twinscale::fuzz::expect_clean_rejection([&] {
    std::istringstream in(std::string(twinscale::fuzz::as_text(data, size)));
    const s::CalibrationTable t = s::read_calibration(in, "fuzz.json");
    std::ostringstream a;
    s::write_calibration(t, a);
    std::istringstream back(a.str());
    std::ostringstream b;
    s::write_calibration(s::read_calibration(back, "fuzz.json"), b);
    if (a.str() != b.str()) {
      std::fprintf(stderr, "calibration table does not round-trip\n");
      std::abort();
    }
  });
  return 0;
}
