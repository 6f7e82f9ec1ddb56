// libFuzzer harness: study files (study/study_file.cpp, axes.cpp and study_keys.cpp,
// compiled into the harness: the rest of study/ needs the simulator). Paths to other documents are resolved against a
// folder that does not exist, so no file outside the corpus is read.
#include "fuzz/fuzz_common.hpp"
#include "study/study_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  twinscale::fuzz::expect_clean_rejection(
      [&] { twinscale::study::parse_study(twinscale::fuzz::as_text(data, size), "/nonexistent/fuzz.toml"); });
  return 0;
}
