// libFuzzer harness: cluster files (config/cluster_file.cpp); accepted clusters below
// 4,096 GPUs are also built into a fabric.
#include "config/cluster_file.hpp"
#include "config/toml_reader.hpp"
#include "fuzz/fuzz_common.hpp"
#include "topology/fabric.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  twinscale::fuzz::expect_clean_rejection([&] {
    const toml::table t = twinscale::config::parse_toml(twinscale::fuzz::as_text(data, size), "fuzz.toml");
    twinscale::config::TableReader r(t, "fuzz.toml");
    const auto spec = twinscale::config::parse_cluster(r, "fuzz");
    if (spec.gpus > 0 && spec.gpus <= 4096) twinscale::topology::Fabric fabric(spec);
  });
  return 0;
}
