// libFuzzer harness: Chakra execution traces (formats/chakra_import.cpp), one ET file as
// the only rank of a set, against a one-GPU, one-layer, one-sequence tiny-1f1b job (the job a foreign set without
// a header needs). Mutations reach PyTorch's foreign nodes (metadata, memory, host
// operators) and broken dependencies. An accepted schedule is validated: the import may
// refuse, never crash. With TWINSCALE_FUZZ_WRITE_SEED=FILE the harness writes the job's
// own ET file (its seed) there and exits.
#include <cstdlib>
#include <fstream>
#include <optional>

#include "config/job_file.hpp"
#include "config/key_overrides.hpp"
#include "formats/chakra.hpp"
#include "fuzz/fuzz_common.hpp"
#include "schedules/schedule.hpp"
#include "schedules/validate.hpp"

namespace {

const twinscale::schedules::Schedule& base() {
  static const twinscale::schedules::Schedule s = [] {
    twinscale::config::JobEdits edits;
    // small enough that its ET file fits libFuzzer's 64 KiB inputs
    for (const char* e : {"parallel.tp=1", "parallel.pp=1", "model.layers=1"})
      edits.set.push_back(twinscale::config::parse_key_override(e));
    edits.gpus = 1;
    edits.global_batch = 1;
    twinscale::schedules::LoweringTarget target;
    target.check_memory = false;
    return twinscale::schedules::lower(twinscale::config::load_job_preset("tiny-1f1b", edits), target);
  }();
  return s;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* seed = std::getenv("TWINSCALE_FUZZ_WRITE_SEED")) {
    std::ofstream(seed, std::ios::binary) << twinscale::formats::export_chakra(base()).at(0);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  twinscale::fuzz::expect_clean_rejection([&] {
    const std::vector<std::string> paths = {"fuzz.0.et"};
    const std::vector<std::string> bytes = {std::string(twinscale::fuzz::as_text(data, size))};
    twinscale::formats::ChakraImportReport report;
    const auto s = twinscale::formats::import_chakra(paths, bytes, base(), &report);
    (void)twinscale::schedules::validate(s);
  });
  return 0;
}
