// A checkpoint carries the identity of the job that wrote it (name, FNV-1a of the
// schedule, layout, step): a restore refuses another job's checkpoint, and each way a
// step can be damaged is named — a folder or a link to /dev/zero as a shard is a clear
// error, not an exception from std::filesystem.
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "tests/skip.hpp"

#include "backend/checkpoint.hpp"
#include "backend/error.hpp"
#include "config/job_file.hpp"
#include "mpi_helpers.hpp"
#include "schedules/schedule.hpp"

using namespace twinscale;
namespace fs = std::filesystem;
using Catch::Contains;

namespace {

schedules::Schedule preset_schedule(const std::string& name) {
  schedules::LoweringTarget target;
  target.check_memory = false;
  return schedules::lower(config::load_job_preset(name), target);
}

/// Step `step` of a tp 2 × pp 1 job `job`, its shards persisted and its manifest written.
backend::Manifest persist(const std::string& dir, int64_t step, const backend::JobIdentity& job) {
  backend::Manifest m;
  m.step = step;
  m.job = job;
  m.tp = 2;
  m.pp = 1;
  m.dp = 4;
  for (int64_t tp = 0; tp < 2; ++tp) {
    auto state = backend::synthetic_state(tp, 0, step, 256);
    m.shards.push_back({tp, 0, 256, backend::fnv1a(state.data(), state.size())});
    backend::ShardPersist p(backend::shard_path(dir, step, tp, 0), std::move(state), 0);
    REQUIRE(p.join().empty());
  }
  backend::write_manifest(dir, m);
  return m;
}

std::string manifest_path(const std::string& dir, int64_t step) {
  return backend::step_dir(dir, step) + "/manifest.json";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Rewrites the manifest of `step` with `from` replaced by `to` (once).
void edit_manifest(const std::string& dir, int64_t step, const std::string& from, const std::string& to) {
  std::string text = read_text(manifest_path(dir, step));
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  std::ofstream(manifest_path(dir, step), std::ios::trunc) << text;
}

} // namespace

TEST_CASE("checkpoint identity: two jobs of one layout have different identities", "[checkpoint]") {
  const schedules::Schedule a = preset_schedule("tiny-1f1b");
  const schedules::Schedule b = preset_schedule("tiny-interleaved");
  REQUIRE(a.layout.tp == b.layout.tp);
  REQUIRE(a.layout.pp == b.layout.pp);
  REQUIRE(a.layout.dp == b.layout.dp);
  const backend::JobIdentity ia = backend::job_identity(a);
  CHECK(ia.schedule_fnv1a.size() == 16);
  CHECK(ia.schedule_fnv1a == backend::job_identity(preset_schedule("tiny-1f1b")).schedule_fnv1a); // deterministic
  CHECK(ia.schedule_fnv1a != backend::job_identity(b).schedule_fnv1a);
}

TEST_CASE("checkpoint identity: restoring tiny-interleaved from a tiny-1f1b checkpoint is refused naming both",
          "[checkpoint]") {
  const std::string dir = backend::test::fresh_dir("ckpt-identity");
  const schedules::Schedule a = preset_schedule("tiny-1f1b");
  const schedules::Schedule b = preset_schedule("tiny-interleaved");
  backend::Manifest m;
  m.step = 0;
  m.job = backend::job_identity(a);
  m.tp = a.layout.tp;
  m.pp = a.layout.pp;
  m.dp = a.layout.dp;
  for (int64_t pp = 0; pp < m.pp; ++pp)
    for (int64_t tp = 0; tp < m.tp; ++tp) m.shards.push_back({tp, pp, 0, backend::fnv1a(nullptr, 0)});
  fs::create_directories(backend::step_dir(dir, 0));
  backend::write_manifest(dir, m);
  const backend::Manifest back = backend::read_manifest(dir, 0);
  CHECK(back.job.name == a.job.name);
  CHECK(back.job.schedule_fnv1a == m.job.schedule_fnv1a);
  CHECK_NOTHROW(backend::check_same_job(back, dir, backend::job_identity(a), a.layout));
  CHECK_THROWS_WITH(backend::check_same_job(back, dir, backend::job_identity(b), b.layout),
                    Contains("another job") && Contains("'" + a.job.name + "'") && Contains("'" + b.job.name + "'") &&
                        Contains("--checkpoint-dir"));
  schedules::Layout other = a.layout;
  other.tp *= 2;
  CHECK_THROWS_WITH(backend::check_same_job(back, dir, backend::job_identity(a), other),
                    Contains("tp " + std::to_string(a.layout.tp)) && Contains("the run has tp"));
  fs::remove_all(dir);
}

TEST_CASE("checkpoint identity: each damaged manifest names what is wrong", "[checkpoint]") {
  const std::string dir = backend::test::fresh_dir("ckpt-damage");
  const backend::JobIdentity job{"j", "0123456789abcdef"};
  struct Damage {
    std::string from, to, says;
  };
  const std::vector<Damage> cases = {
      {"\"step\": 1", "\"step\": 1, \"step\": 1", "key \"step\" is given twice"},
      {"\"step\": 1", "\"step\": 1, \"stpe\": 2", "unknown key \"stpe\"; did you mean \"step\"?"},
      {"\"version\": 2", "\"version\": 1", "version 1 carries no job identity"},
      {"\"version\": 2", "\"version\": 9", "version 9 is not supported"},
      {"\"step\": 1", "\"step\": 5", "holds step 5, but its folder is step-1"},
      {"\"format\": \"twinscale-checkpoint\"", "\"format\": \"x\"", "$.format"},
      {"0123456789abcdef", "xyz", "$.job.schedule_fnv1a: must be 16 lower-case hex digits"},
      {"\"dp\": 4", "\"dp\": 0", "$.layout.dp: 0 is out of range"},
      {"\"tp\": 1\n", "\"tp\": 0\n", "repeats the shard of tp 0 pp 0"},
      {"{", "[", "not valid JSON"},
  };
  for (const Damage& d : cases) {
    persist(dir, 1, job);
    edit_manifest(dir, 1, d.from, d.to);
    INFO(d.to);
    CHECK_THROWS_WITH(backend::read_manifest(dir, 1), Contains("manifest.json") && Contains(d.says));
    const backend::CheckpointScan scan = backend::scan_checkpoints(dir);
    CHECK_FALSE(scan.step.has_value());
    REQUIRE(scan.skipped.size() == 1);
    CHECK_THAT(scan.skipped[0], Contains("step 1: ") && Contains(d.says));
  }
  fs::remove_all(dir);
}

TEST_CASE("checkpoint identity: a shard that is a folder or a link to /dev/zero is named, not read", "[checkpoint]") {
  const std::string dir = backend::test::fresh_dir("ckpt-shard");
  const backend::JobIdentity job{"j", "0123456789abcdef"};
  persist(dir, 1, job);
  const backend::Manifest m = persist(dir, 2, job);
  const std::string shard = backend::shard_path(dir, 2, 1, 0);
  fs::remove(shard);
  fs::create_directory(shard);
  CHECK_THROWS_WITH(backend::read_shard(dir, 2, m.shards[1]),
                    Contains("shard-tp1-pp0.bin") && Contains("not a regular file"));
  backend::CheckpointScan scan = backend::scan_checkpoints(dir);
  CHECK(scan.step == 1); // the older, intact step
  REQUIRE(scan.skipped.size() == 1);
  CHECK_THAT(scan.skipped[0], Contains("step 2: ") && Contains("not a regular file"));
  fs::remove(shard);
  fs::create_symlink("/dev/zero", shard);
  CHECK_THROWS_WITH(backend::read_shard(dir, 2, m.shards[1]), Contains("not a regular file"));
  CHECK(backend::scan_checkpoints(dir).step == 1);
  fs::remove(shard);
  CHECK_THROWS_WITH(backend::read_shard(dir, 2, m.shards[1]), Contains("cannot open"));
  CHECK_THAT(backend::scan_checkpoints(dir).skipped.at(0), Contains("shard-tp1-pp0.bin") && Contains("cannot be read"));
  std::ofstream(shard) << "short";
  CHECK_THROWS_WITH(backend::read_shard(dir, 2, m.shards[1]), Contains("5 bytes, the manifest says 256"));
  fs::remove(manifest_path(dir, 2));
  CHECK_THAT(backend::scan_checkpoints(dir).skipped.at(0), Contains("step 2: no manifest.json"));
  fs::remove_all(dir);
}

TEST_CASE("checkpoint identity: run --restore of tiny-interleaved from tiny-1f1b's checkpoint exits 1 naming both",
          "[checkpoint][mpi]") {
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  const std::string dir = backend::test::fresh_dir("ckpt-run-identity");
  const std::string run = backend::test::mpirun(8) + " " TWINSCALE_CLI " run --timeout 30 --checkpoint-dir " + dir;
  auto r = backend::test::shell(run + " --preset tiny-1f1b --checkpoint-step 0 --checkpoint-bytes 4096", 120);
  INFO(r.output);
  REQUIRE(r.status == 0);
  r = backend::test::shell(run + " --preset tiny-interleaved --restore", 120);
  INFO(r.output);
  CHECK(r.status != 0);
  CHECK_THAT(r.output,
             Contains("--restore: checkpoint step 0 in " + dir + " belongs to another job: job 'tiny-1f1b'") &&
                 Contains("this run is job 'tiny-interleaved'"));
  CHECK_THAT(r.output, !Contains("restored checkpoint step"));
  r = backend::test::shell(run + " --preset tiny-1f1b --restore", 120); // the job that wrote it
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Contains("restored checkpoint step 0"));
  fs::remove_all(dir);
}
