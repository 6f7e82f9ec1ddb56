// libFuzzer harness: command-line values (cli/checked_options.cpp): integers, seeds and
// job shapes "AxBxC" as given to --gpus, --seed, --job and --synthetic.
#include "cli/checked_options.hpp"
#include "fuzz/fuzz_common.hpp"
#include "schedules/limits.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace c = twinscale::cli;
  const std::string text(twinscale::fuzz::as_text(data, size));
  twinscale::fuzz::expect_clean_rejection([&] {
    const int64_t v = c::parse_integer_option("--gpus", text, 1, twinscale::schedules::kMaxRanks, "2^20");
    if (v < 1 || v > twinscale::schedules::kMaxRanks) std::abort();
  });
  twinscale::fuzz::expect_clean_rejection([&] { c::parse_seed_option("--seed", text); });
  twinscale::fuzz::expect_clean_rejection([&] {
    const auto s = c::parse_shape_option("--job", text, "8x16x8");
    if (s[0] * s[1] * s[2] > twinscale::schedules::kMaxRanks) std::abort();
  });
  return 0;
}
