// libFuzzer harness: schedule files (schedules/schedule_json.cpp). An accepted schedule
// of at most 64 ranks is validated, and written, read and written again byte-identically.
#include <cstdlib>
#include <sstream>

#include "fuzz/fuzz_common.hpp"
#include "schedules/schedule_json.hpp"
#include "schedules/validate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace s = twinscale::schedules;
  twinscale::fuzz::expect_clean_rejection([&] {
    std::istringstream in(std::string(twinscale::fuzz::as_text(data, size)));
    const s::Schedule sch = s::read_schedule_json(in, "fuzz.json");
    if (sch.world() > 64) return;
    s::validate(sch, s::ValidateOptions{});
    std::ostringstream a;
    s::write_schedule_json(sch, a);
    std::istringstream back(a.str());
    std::ostringstream b;
    s::write_schedule_json(s::read_schedule_json(back, "fuzz.json"), b);
    if (a.str() != b.str()) {
      std::fprintf(stderr, "schedule JSON does not round-trip\n");
      std::abort();
    }
  });
  return 0;
}
