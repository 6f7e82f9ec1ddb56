// Two-stage checkpoint pieces (M16): deterministic state, atomic shard persist,
// manifests, and which step counts as the latest complete one.
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "backend/checkpoint.hpp"
#include "backend/error.hpp"
#include "mpi_helpers.hpp"

using namespace twinscale;
namespace fs = std::filesystem;

namespace {

backend::Manifest persist_step(const std::string& dir, int64_t step, size_t bytes) {
  backend::Manifest m;
  m.step = step;
  m.job = {"test-job", "0123456789abcdef"};
  m.tp = 2;
  m.pp = 1;
  m.dp = 2;
  for (int64_t tp = 0; tp < 2; ++tp) {
    auto state = backend::synthetic_state(tp, 0, step, bytes);
    m.shards.push_back({tp, 0, bytes, backend::fnv1a(state.data(), state.size())});
    backend::ShardPersist p(backend::shard_path(dir, step, tp, 0), std::move(state), 0);
    REQUIRE(p.join().empty());
  }
  backend::write_manifest(dir, m);
  return m;
}

} // namespace

TEST_CASE("checkpoint: synthetic state is deterministic and differs per shard and step") {
  CHECK(backend::synthetic_state(1, 2, 3, 1000) == backend::synthetic_state(1, 2, 3, 1000));
  CHECK(backend::synthetic_state(1, 2, 3, 1000) != backend::synthetic_state(0, 2, 3, 1000));
  CHECK(backend::synthetic_state(1, 2, 3, 1000) != backend::synthetic_state(1, 2, 4, 1000));
  const uint8_t abc[] = {'a', 'b', 'c'};
  CHECK(backend::fnv1a(abc, 3) == 0xe71fa2190541574bull); // FNV-1a 64 of "abc"
}

TEST_CASE("checkpoint: persisted shards read back against the manifest") {
  const std::string dir = backend::test::fresh_dir("ckpt");
  const backend::Manifest m = persist_step(dir, 7, 4096);
  const backend::Manifest back = backend::read_manifest(dir, 7);
  REQUIRE(back.shards.size() == 2);
  CHECK(back.shards[1].fnv1a == m.shards[1].fnv1a);
  CHECK(backend::read_shard(dir, 7, back.shards[1]) == backend::synthetic_state(1, 0, 7, 4096));
  CHECK(backend::latest_complete_step(dir) == 7);
  for (const auto& e : fs::directory_iterator(backend::step_dir(dir, 7)))
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos); // renamed into place
  // A corrupted shard is named.
  {
    std::fstream f(backend::shard_path(dir, 7, 1, 0), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x42');
  }
  CHECK_THROWS_WITH(backend::read_shard(dir, 7, back.shards[1]),
                    Catch::Contains("shard-tp1-pp0.bin") && Catch::Contains("checksum"));
  fs::remove_all(dir);
}

TEST_CASE("checkpoint: a step without manifest, or with a missing shard, is not complete") {
  const std::string dir = backend::test::fresh_dir("ckpt-latest");
  CHECK_FALSE(backend::latest_complete_step(dir).has_value());
  persist_step(dir, 1, 1000);
  persist_step(dir, 2, 1000);
  // Step 3: shards written (one only half, as a temp file), no manifest: a persist cut short.
  {
    backend::ShardPersist p(backend::shard_path(dir, 3, 0, 0), backend::synthetic_state(0, 0, 3, 1000), 0);
    REQUIRE(p.join().empty());
    std::ofstream(backend::shard_path(dir, 3, 1, 0) + ".tmp.123") << "partial";
  }
  CHECK(backend::latest_complete_step(dir) == 2);
  fs::remove(backend::shard_path(dir, 2, 1, 0));
  CHECK(backend::latest_complete_step(dir) == 1);
  CHECK_THROWS_AS(backend::read_manifest(dir, 3), backend::BackendError);
  fs::remove_all(dir);
}

TEST_CASE("checkpoint: the persist paces itself to the storage bandwidth") {
  const std::string dir = backend::test::fresh_dir("ckpt-bw");
  const auto t0 = std::chrono::steady_clock::now();
  backend::ShardPersist p(backend::shard_path(dir, 0, 0, 0), std::vector<uint8_t>(200000, 1), 1e6);
  REQUIRE(p.join().empty());
  // 200 kB at 1 MB/s: about 0.2 s (a lower bound only; no upper bound on a loaded machine).
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >= 0.15);
  fs::remove_all(dir);
}

TEST_CASE("checkpoint: a killed writer's temporaries go on the next commit of that step and on restore",
          "[hardening]") {
  const fs::path dir = twinscale::test::empty_scratch_dir("ckpt-tmp");
  fs::create_directories(dir / "step-3");
  fs::create_directories(dir / "step-4");
  auto leave = [](const fs::path& p) { std::ofstream(p) << "partial"; };
  leave(dir / "step-3" / "shard-tp0-pp0.bin.tmp.4242"); // a writer killed mid-shard
  leave(dir / "step-4" / "shard-tp1-pp0.bin.tmp.4243");
  leave(dir / "step-4" / "notes.txt"); // not ours: left alone
  persist_step(dir.string(), 3, 64);   // commits step 3 again
  CHECK(!fs::exists(dir / "step-3" / "shard-tp0-pp0.bin.tmp.4242"));
  CHECK(fs::exists(dir / "step-3" / "shard-tp0-pp0.bin"));
  CHECK(fs::exists(dir / "step-4" / "shard-tp1-pp0.bin.tmp.4243")); // another step: until restore
  CHECK(backend::remove_checkpoint_temporaries(dir.string()) == 1); // what restore calls
  CHECK(!fs::exists(dir / "step-4" / "shard-tp1-pp0.bin.tmp.4243"));
  CHECK(fs::exists(dir / "step-4" / "notes.txt"));
  CHECK(backend::latest_complete_step(dir.string()) == 3);
  fs::remove_all(dir);
}
