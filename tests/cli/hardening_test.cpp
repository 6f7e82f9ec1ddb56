// Issue 12 (hardening), as a hostile user would try it: every case gives a clear exit-1
// error naming what is wrong (or exit 2 for a usage error), never a crash, a wrap-around
// or a run that eats the machine. The CLI runs as a process.
#include <catch2/catch.hpp>

#include "tests/cli_runner.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {
using Result = twinscale::test::CliOutput;
using twinscale::test::slurp;
using twinscale::test::write_text;

fs::path scratch() { return twinscale::test::scratch_dir("hardening"); }

/// Runs the CLI; `memory_bytes` > 0 sets TWINSCALE_MEMORY_BYTES (the memory the refusal
/// checks compare against) for this run only.
Result run(const std::string& args, double memory_bytes = 0) {
  std::string env;
  if (memory_bytes > 0) env = "TWINSCALE_MEMORY_BYTES=" + std::to_string(static_cast<long long>(memory_bytes)) + " ";
  return twinscale::test::run_cli_split(args, scratch(), env);
}

/// Replaces the first `from` in `text` by `to` (REQUIREs that it is there).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

const char* kTinyJob = "name = \"t\"\ncluster = \"tiny-2tier\"\n[model]\nlayers = 2\nhidden = 64\nheads = 4\n"
                       "seq_len = 16\nvocab = 64\n[parallel]\ndp = 1\nglobal_batch = 2\n";

/// tiny-1f1b exported once per test process.
std::string tiny_schedule() {
  static std::string text;
  if (text.empty()) {
    const fs::path file = scratch() / "tiny.json";
    const Result r = run("schedule export --preset tiny-1f1b --out " + file.string());
    REQUIRE(r.code == 0);
    text = slurp(file);
  }
  return text;
}
} // namespace

TEST_CASE("hardening: a schedule whose layout product overflows is refused, not crashed on", "[cli][hardening]") {
  const fs::path f = scratch() / "overflow.json";
  const std::string text = tiny_schedule();
  REQUIRE(text.find("\"layout\":{\"dp\":2,\"pp\":2,\"tp\":2}") != std::string::npos);
  // 2^32 · 2^32 · 1 wraps to 0 in int64 arithmetic: the old size check passed and validate crashed
  write_text(f, replaced(text, "\"layout\":{\"dp\":2,\"pp\":2,\"tp\":2}",
                         "\"layout\":{\"dp\":4294967296,\"pp\":1,\"tp\":4294967296}"));
  const Result r = run("schedule validate " + f.string());
  CHECK(r.code == 1);
  CHECK(r.says("overflow.json"));
  CHECK(r.says("$.layout"));
  CHECK(r.says("1048576"));
}

TEST_CASE("hardening: schedule files are checked against their layout", "[cli][hardening]") {
  const fs::path f = scratch() / "bad.json";
  const std::string text = tiny_schedule();
  // memory_by_stage must have one entry per pipeline stage
  const auto mem = text.find("\"memory_by_stage\":[{");
  REQUIRE(mem != std::string::npos);
  const auto second = text.find("},{", mem);
  const auto end = text.find("}]", mem);
  REQUIRE(second < end);
  write_text(f, text.substr(0, second + 1) + text.substr(end + 1));
  Result r = run("schedule validate " + f.string());
  CHECK(r.code == 1);
  CHECK(r.says("$.memory_by_stage"));
  CHECK(r.says("pp = 2"));
  // the embedded job must be the one the layout was lowered from
  write_text(f, replaced(text, "\"layout\":{\"dp\":2,\"pp\":2,\"tp\":2}", "\"layout\":{\"dp\":1,\"pp\":2,\"tp\":4}"));
  r = run("schedule validate " + f.string());
  CHECK(r.code == 1);
  CHECK(r.says("disagrees with $.job.parallel"));
  // a number beyond double: a message naming the file, not a bare library exception
  write_text(f, replaced(text, "\"model_flops_per_iteration\":", "\"model_flops_per_iteration\":1e400,\"x\":"));
  r = run("schedule validate " + f.string());
  CHECK(r.code == 1);
  CHECK(r.says("bad.json"));
  CHECK(r.says("not valid JSON"));
  // a schedule's job.cluster may only be a preset or a file next to it: never a device
  write_text(f, replaced(text, "\"cluster\":\"tiny-2tier\"", "\"cluster\":\"/dev/zero\""));
  r = run("schedule validate " + f.string());
  CHECK(r.code == 1);
  CHECK(r.says("job.cluster"));
  CHECK(r.says("outside the document's folder"));
}

TEST_CASE("hardening: device files and folders are not read as inputs", "[cli][hardening]") {
  Result r = run("schedule show /dev/zero");
  CHECK(r.code == 1);
  CHECK(r.says("not a regular file"));
  r = run("schedule validate /dev/zero");
  CHECK(r.code == 1);
  CHECK(r.says("not a regular file"));
  r = run("schedule show " + scratch().string());
  CHECK(r.code == 1);
  CHECK(r.says("not a regular file"));
  // a job's cluster: a preset, or a file in the job's folder (resolved relative to it)
  const fs::path dir = scratch() / "jobdir";
  fs::create_directories(dir);
  write_text(dir / "job.toml", replaced(kTinyJob, "tiny-2tier", "/dev/zero"));
  r = run("schedule show " + (dir / "job.toml").string());
  CHECK(r.code == 1);
  CHECK(r.says("key 'cluster'"));
  write_text(dir / "job.toml", replaced(kTinyJob, "tiny-2tier", "../c.toml"));
  r = run("schedule show " + (dir / "job.toml").string());
  CHECK(r.code == 1);
  CHECK(r.says("outside the document's folder"));
  fs::copy_file(fs::path(TWINSCALE_SOURCE_DIR) / "presets/clusters/tiny-2tier.toml", dir / "c.toml",
                fs::copy_options::overwrite_existing);
  write_text(dir / "job.toml", replaced(kTinyJob, "tiny-2tier", "c.toml"));
  r = run("schedule show " + (dir / "job.toml").string()); // from any working directory
  INFO(r.err);
  CHECK(r.code == 0);
  write_text(dir / "job.toml", replaced(kTinyJob, "tiny-2tier", (dir / "c.toml").string())); // absolute, inside
  r = run("schedule show " + (dir / "job.toml").string());
  CHECK(r.code == 0);
  fs::create_symlink("/dev/zero", dir / "z.toml");
  write_text(dir / "job.toml", replaced(kTinyJob, "tiny-2tier", "z.toml")); // a link out of the folder
  r = run("schedule show " + (dir / "job.toml").string());
  CHECK(r.code == 1);
  CHECK(r.says("outside the document's folder"));
  fs::remove_all(dir);
}

TEST_CASE("hardening: huge sizes in a job give the right message", "[cli][hardening]") {
  const fs::path f = scratch() / "huge.toml";
  // 4·hidden overflowed and was reported as "ffn_hidden must be ≥ 1"
  write_text(f, replaced(kTinyJob, "hidden = 64", "hidden = 4611686018427387904"));
  Result r = run("schedule show " + f.string());
  CHECK(r.code == 1);
  CHECK(r.says("model.hidden = 4611686018427387904 is larger than"));
  // micro_batch·seq_len overflowed int64
  write_text(f, replaced(replaced(kTinyJob, "seq_len = 16", "seq_len = 16777216"), "global_batch = 2",
                         "micro_batch = 1048576\nglobal_batch = 1048576"));
  r = run("schedule show " + f.string());
  CHECK(r.code == 1);
  CHECK(r.says("micro_batch·model.seq_len"));
  // a huge pp
  write_text(f, replaced(kTinyJob, "dp = 1", "dp = 1\npp = 4294967296"));
  r = run("schedule show " + f.string());
  CHECK(r.code == 1);
  CHECK(r.says("1048576"));
}

TEST_CASE("hardening: topology ecmp with an overflowing job shape is refused", "[cli][hardening]") {
  const Result r = run("topology ecmp tiny-2tier --job 8x4294967296x4294967296");
  CHECK(r.code == 1);
  CHECK(r.says("--job"));
  CHECK(r.says("1048576"));
}

TEST_CASE("hardening: commands that would not fit in memory are refused up front, in one line", "[cli][hardening]") {
  // schedule show with 10^6 micro-batches: billions of ops (it reached 6 GB in 10 s before)
  Result r = run("schedule show --preset tiny-1f1b --global-batch 2000000", 4e9);
  CHECK(r.code == 1);
  CHECK(r.says("needs about"));
  CHECK(r.says("global_batch"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  // flow mode at 131,072 GPUs (about 12.4 GiB) on an 8 GB machine: refused with the
  // estimate and the ways out
  r = run("simulate --preset gpt-175b-megascale --gpus 131072 --global-batch 65536", 8e9);
  CHECK(r.code == 1);
  CHECK(r.says("flow mode on 131072 GPUs needs about"));
  CHECK(r.says("--mode analytic"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  // the same in analytic mode is not refused for memory
  r = run("simulate --preset tiny-1f1b --mode analytic", 4e9);
  CHECK(r.code == 0);
}

TEST_CASE("hardening: a campaign with an absurd fault rate is refused, not run until memory runs out",
          "[cli][hardening]") {
  const fs::path f = scratch() / "faults.toml";
  write_text(f, "name = \"absurd\"\nsource = \"test\"\n[[category]]\nkind = \"other\"\nname = \"everything\"\n"
                "rate_per_node_day = 1e300\nscope = \"node\"\ndetection = \"explicit-error\"\n");
  const Result r = run("campaign --preset tiny-1f1b --faults " + f.string() + " --iteration-time 1 --days 1");
  CHECK(r.code == 1);
  CHECK(r.says("faults per seed"));
  CHECK(r.says("everything"));
}

TEST_CASE("hardening: command-line values are parsed exactly", "[cli][hardening]") {
  Result r = run("simulate --preset tiny-1f1b --seed -1");
  CHECK(r.code == 1);
  CHECK(r.says("--seed '-1'"));
  r = run("schedule show --preset tiny-1f1b --gpus 1e20"); // not a whole number: usage (exit 2)
  CHECK(r.code == 2);
  CHECK(r.says("--gpus '1e20'"));
  CHECK(!r.says("9223372036854775807"));
  r = run("schedule show --preset tiny-1f1b --gpus 4294967296");
  CHECK(r.code == 1);
  CHECK(r.says("1048576"));
  r = run("run --synthetic 2x2x2 --checkpoint-dir /tmp --checkpoint-step -5");
  CHECK(r.code == 1);
  CHECK(r.says("--checkpoint-step '-5'"));
  r = run("run --synthetic 2x2x2 --synthetic-hidden -64");
  CHECK(r.code == 1);
  CHECK(r.says("--synthetic-hidden '-64'"));
  r = run("calibrate t.json --synthetic 2x2x2 --synthetic-hidden -64 --out c.json");
  CHECK(r.code == 1);
  CHECK(r.says("--synthetic-hidden '-64'"));
  r = run("calibrate t.json --synthetic 2x2x2 --synthetic-micro-batches 2000000000 --out c.json");
  CHECK(r.code == 1);
  CHECK(r.says("--synthetic-micro-batches '2000000000'"));
  r = run("run --synthetic 4294967296x4294967296x1");
  CHECK(r.code == 1);
  CHECK(r.says("--synthetic"));
  CHECK(r.says("1048576"));
  r = run("campaign --preset tiny-1f1b --seed -3 --iteration-time 1");
  CHECK(r.code == 1);
  CHECK(r.says("--seed '-3'"));
}

TEST_CASE("hardening: an unknown sub-command is named", "[cli][hardening]") {
  Result r = run("frobnicate --preset tiny-1f1b");
  CHECK(r.code == 2);
  CHECK(r.says("unknown sub-command 'frobnicate'"));
  CHECK(r.says("simulate"));
  r = run("schedule frobnicate");
  CHECK(r.code == 2);
  CHECK(r.says("unknown sub-command 'frobnicate' of 'schedule'"));
  CHECK(r.says("validate"));
}
