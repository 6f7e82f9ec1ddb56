// libFuzzer harness: checkpoint manifests (backend/checkpoint.cpp, compiled into the
// harness: the rest of backend/ needs MPI). The input is written as
// step-0/manifest.json of a private checkpoint folder, then read as a restore reads it:
// read_manifest (the format, the job identity, the layout, the shard list) and
// scan_checkpoints (which must name why a step cannot be restored, never throw). An
// accepted manifest with a few small shards gets zero-filled shard files, which
// read_shard must check against their listed sizes and checksums; it is also written
// back with write_manifest and must read back equal.
#include <filesystem>

#include "backend/checkpoint.hpp"
#include "fuzz/fuzz_common.hpp"

namespace {

namespace b = twinscale::backend;

bool same(const b::Manifest& a, const b::Manifest& c) {
  if (a.version != c.version || a.step != c.step || a.job.name != c.job.name ||
      a.job.schedule_fnv1a != c.job.schedule_fnv1a || a.tp != c.tp || a.pp != c.pp || a.dp != c.dp ||
      a.shards.size() != c.shards.size())
    return false;
  for (size_t i = 0; i < a.shards.size(); ++i) {
    const b::ShardInfo &x = a.shards[i], &y = c.shards[i];
    if (x.tp != y.tp || x.pp != y.pp || x.bytes != y.bytes || x.fnv1a != y.fnv1a) return false;
  }
  return true;
}

/// Zero-filled shard files for a small accepted manifest, each read back through read_shard.
void read_small_shards(const std::string& dir, const b::Manifest& m) {
  if (m.shards.size() > 8) return;
  for (const b::ShardInfo& s : m.shards)
    if (s.bytes > 4096) return;
  for (const b::ShardInfo& s : m.shards) {
    const std::vector<uint8_t> zeros(s.bytes, 0);
    twinscale::fuzz::write_input(b::shard_path(dir, m.step, s.tp, s.pp), zeros.data(), zeros.size());
  }
  if (b::scan_checkpoints(dir).step != m.step) {
    std::fprintf(stderr, "a manifest whose shards are all present and of their sizes is not restorable\n");
    std::abort();
  }
  for (const b::ShardInfo& s : m.shards)
    twinscale::fuzz::expect_clean_rejection([&] { b::read_shard(dir, m.step, s); });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path dir = twinscale::fuzz::scratch_dir() / "ckpt";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  twinscale::fuzz::write_input(std::filesystem::path(b::step_dir(dir.string(), 0)) / "manifest.json", data, size);
  twinscale::fuzz::expect_clean_rejection([&] {
    const b::CheckpointScan scan = b::scan_checkpoints(dir.string());
    if (!scan.step && scan.skipped.size() != 1) {
      std::fprintf(stderr, "a step that cannot be restored is not named\n");
      std::abort();
    }
    const b::Manifest m = b::read_manifest(dir.string(), 0);
    read_small_shards(dir.string(), m);
    const std::string again = (twinscale::fuzz::scratch_dir() / "ckpt-again").string();
    std::filesystem::create_directories(b::step_dir(again, m.step));
    b::write_manifest(again, m);
    if (!same(b::read_manifest(again, m.step), m)) {
      std::fprintf(stderr, "an accepted manifest does not read back as itself\n");
      std::abort();
    }
  });
  return 0;
}
