// libFuzzer harness: a run directory's rank-state file (records/run_dir.cpp), the strict
// reader of what `twinscale run` and `twinscale simulate --hang-rank --run-dir` leave
// behind and `diagnose` reads. The input is written as rank-0.json in a private folder
// and read through read_rank_state. An accepted state is written back with
// write_rank_state; that file must read back and write again byte-identically.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fuzz/fuzz_common.hpp"
#include "records/run_dir.hpp"

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace r = twinscale::records;
  const std::filesystem::path dir = twinscale::fuzz::scratch_dir() / "run";
  twinscale::fuzz::write_input(dir / "rank-0.json", data, size);
  twinscale::fuzz::expect_clean_rejection([&] {
    const r::RankState st = r::read_rank_state((dir / "rank-0.json").string());
    if (st.rank < 0 || st.rank > (int64_t{1} << 40)) return; // written under another name; not this property
    const std::string out1 = (twinscale::fuzz::scratch_dir() / "out1").string();
    const std::string out2 = (twinscale::fuzz::scratch_dir() / "out2").string();
    r::write_rank_state(out1, st);
    const std::string first = slurp(r::rank_state_path(out1, st.rank));
    r::write_rank_state(out2, r::read_rank_state(r::rank_state_path(out1, st.rank)));
    if (slurp(r::rank_state_path(out2, st.rank)) != first) {
      std::fprintf(stderr, "an accepted rank state does not write back identically\n");
      std::abort();
    }
    std::filesystem::remove(r::rank_state_path(out1, st.rank));
    std::filesystem::remove(r::rank_state_path(out2, st.rank));
  });
  return 0;
}
