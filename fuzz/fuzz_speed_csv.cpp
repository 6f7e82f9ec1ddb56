// libFuzzer harness: GPU speed files (config/gpu_speeds.cpp) on the tiny-2tier cluster's
// fabric, every GPU a rank. Every accepted factor lies in the one valid range.
#include <cstdint>
#include <vector>

#include "config/cluster_file.hpp"
#include "config/gpu_speeds.hpp"
#include "fuzz/fuzz_common.hpp"
#include "schedules/limits.hpp"
#include "topology/fabric.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace s = twinscale::schedules;
  static const twinscale::topology::Fabric fabric(twinscale::config::load_cluster("tiny-2tier"));
  static const std::vector<int64_t> gpu_of_rank = [] {
    std::vector<int64_t> v(static_cast<size_t>(fabric.gpus()));
    for (size_t g = 0; g < v.size(); ++g) v[g] = static_cast<int64_t>(g);
    return v;
  }();
  twinscale::fuzz::expect_clean_rejection([&] {
    const auto speeds = twinscale::config::parse_gpu_speeds(std::string(twinscale::fuzz::as_text(data, size)),
                                                            "fuzz.csv", fabric, gpu_of_rank);
    for (const double f : speeds)
      if (!(f >= s::kMinGpuSpeedFactor && f <= s::kMaxGpuSpeedFactor)) {
        std::fprintf(stderr, "an accepted speed factor %g is outside the valid range\n", f);
        std::abort();
      }
  });
  return 0;
}
