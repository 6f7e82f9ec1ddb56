// libFuzzer harness: the strict JSON parse every JSON input goes through
// (schedules/json_document.cpp) — run-directory rank states, checkpoint manifests, study
// stores' cells, calibration tables, traces. An accepted document is checked for unknown
// keys and written back (dump recurses: the nesting bound must hold).
#include <nlohmann/json.hpp>

#include "fuzz/fuzz_common.hpp"
#include "schedules/json_document.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace s = twinscale::schedules;
  twinscale::fuzz::expect_clean_rejection([&] {
    const nlohmann::json j = s::parse_json_document(twinscale::fuzz::as_text(data, size), "fuzz.json");
    const std::string text = j.dump();
    if (s::parse_json_document(text, "dump.json") != j) {
      std::fprintf(stderr, "an accepted JSON document does not read back as itself\n");
      std::abort();
    }
    s::check_json_keys(j, {"rank", "pid", "host", "status", "events"}, "fuzz.json", "$");
  });
  return 0;
}
