// libFuzzer harness: job files (config/job_file.cpp); accepted jobs also pass check_job.
#include "config/job_file.hpp"
#include "fuzz/fuzz_common.hpp"
#include "schedules/check_job.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  twinscale::fuzz::expect_clean_rejection([&] {
    const auto job = twinscale::config::parse_job(twinscale::fuzz::as_text(data, size), "fuzz.toml");
    twinscale::schedules::check_job(job); // what the reader accepted is a valid job
  });
  return 0;
}
