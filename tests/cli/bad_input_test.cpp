// The error policy end to end (common/error.hpp): every command, given a bad input of each
// kind — a missing file, an unknown key, a name that does not exist, a value out of range,
// a rank outside the job, a file that is not what it should be — exits 1 (never 3, never a
// crash) and its message names the culprit.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

#include "tests/cli_runner.hpp"

namespace {

namespace fs = std::filesystem;

struct BadInput {
  std::string args;    // command line after `twinscale`; {D} is the data directory
  std::string culprit; // what the message must name
};

std::string write(const fs::path& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

/// A directory of bad files, made once per test run.
fs::path bad_files() {
  static const fs::path dir = [] {
    const fs::path d = twinscale::test::scratch_dir("bad-input");
    write(d, "job-bad-key.toml", "name = \"t\"\ncluster = \"tiny-2tier\"\n[model]\nlayerz = 4\n");
    std::ifstream preset(std::string(TWINSCALE_SOURCE_DIR) + "/presets/clusters/tiny-2tier.toml");
    std::string cluster((std::istreambuf_iterator<char>(preset)), std::istreambuf_iterator<char>());
    cluster.replace(cluster.find("[server]\n"), 9, "[server]\nnicz = 8\n"); // a misspelled key
    write(d, "cluster-bad-key.toml", cluster);
    write(d, "garbage.json", "{ this is not json");
    write(d, "plan-unknown-link.toml",
          "[[event]]\nkind = \"link-flap\"\nlink = \"tor99-agg42\"\nat_s = 1\nduration_s = 1\n");
    write(d, "plan-ok.toml", "[[event]]\nkind = \"server-crash\"\nserver = \"server0\"\nat_s = 1\n");
    write(d, "recovery-bad-key.toml", "[detection]\nheartbeat_periodd_s = 5\n");
    return d;
  }();
  return dir;
}

std::string expand(std::string args) {
  const std::string dir = bad_files().string();
  for (size_t at; (at = args.find("{D}")) != std::string::npos;) args.replace(at, 3, dir);
  return args;
}

void check_all(const std::vector<BadInput>& cases) {
  for (const auto& c : cases) {
    const std::string args = expand(c.args);
    const auto r = twinscale::test::run_cli(args, twinscale::test::Capture::StdoutAndStderr);
    INFO("twinscale " << args << "\n" << r.out);
    CHECK(r.rc == 1);
    CHECK(r.out.find(expand(c.culprit)) != std::string::npos);
    CHECK(r.out.find("internal error") == std::string::npos);
  }
}

} // namespace

TEST_CASE("bad input: schedule show / export / validate exit 1 naming the culprit", "[cli][errors]") {
  check_all({
      {"schedule show {D}/missing-job.toml", "{D}/missing-job.toml"},
      {"schedule show {D}/job-bad-key.toml", "layerz"},
      {"schedule show --preset no-such-job", "no-such-job"},
      {"schedule show --preset tiny-1f1b --gpus 6", "6"},
      {"schedule show --preset tiny-1f1b --gpu-memory-gb 0.001", "GB per GPU"},
      {"schedule export --preset tiny-1f1b --out {D}/no-such-dir/s.json", "{D}/no-such-dir/s.json"},
      {"schedule validate {D}/garbage.json", "{D}/garbage.json"},
      {"schedule validate {D}/missing.json", "{D}/missing.json"},
  });
}

TEST_CASE("bad input: topology show / ecmp exit 1 naming the culprit", "[cli][errors]") {
  check_all({
      {"topology show no-such-cluster", "no-such-cluster"},
      {"topology show {D}/cluster-bad-key.toml", "nicz"},
      {"topology ecmp tiny-2tier --job 3x0x2", "3x0x2"},
      {"topology ecmp tiny-2tier --job 16x4x2", "16"},
  });
}

TEST_CASE("bad input: simulate exits 1 naming the culprit", "[cli][errors][sim]") {
  check_all({
      {"simulate {D}/job-bad-key.toml", "layerz"},
      {"simulate --preset tiny-1f1b --cluster no-such-cluster", "no-such-cluster"},
      {"simulate --preset tiny-1f1b --mode analytic --faults {D}/plan-ok.toml", "--mode flow"},
      {"simulate --preset tiny-1f1b --faults {D}/plan-unknown-link.toml", "tor99-agg42"},
      {"simulate --preset tiny-1f1b --faults {D}/missing-plan.toml", "{D}/missing-plan.toml"},
      {"simulate --preset tiny-1f1b --trace {D}/t.json --ranks 0-99", "0-99"},
      {"simulate --preset tiny-1f1b --calibration {D}/garbage.json", "{D}/garbage.json"},
      {"simulate --preset tiny-1f1b --gpu-memory-gb 0.001", "GB per GPU"},
  });
}

TEST_CASE("bad input: campaign and tune-checkpoint exit 1 naming the culprit", "[cli][errors][faults]") {
  check_all({
      {"campaign --preset tiny-megascale --faults no-such-model --iteration-time 1", "no-such-model"},
      {"campaign --preset tiny-megascale --recovery {D}/recovery-bad-key.toml --iteration-time 1",
       "heartbeat_periodd_s"},
      {"campaign --preset tiny-megascale --days 0 --iteration-time 1", "--days"},
      {"campaign --preset tiny-megascale --cluster no-such-cluster", "no-such-cluster"},
      {"tune-checkpoint --preset tiny-megascale --iteration-time -1", "--iteration-time"},
      {"tune-checkpoint {D}/job-bad-key.toml", "layerz"},
  });
}

TEST_CASE("bad input: run, compare and calibrate exit 1 naming the culprit", "[cli][errors][backend]") {
  check_all({
      {"run {D}/job-bad-key.toml", "layerz"},
      {"compare {D}/missing-a.json {D}/missing-b.json", "{D}/missing-a.json"},
      {"compare {D}/garbage.json {D}/garbage.json", "{D}/garbage.json"},
      {"calibrate {D}/garbage.json --preset tiny-1f1b --out {D}/cal.json", "{D}/garbage.json"},
  });
}

TEST_CASE("bad input: a number option that is not finite (nan, inf) exits 1 naming the option", "[cli][errors]") {
  check_all({
      {"simulate --preset tiny-1f1b --gpu-memory-gb nan", "--gpu-memory-gb 'nan'"},
      {"campaign --preset tiny-megascale --gpu-memory-gb nan --iteration-time 1", "--gpu-memory-gb 'nan'"},
      {"campaign --preset tiny-megascale --days -inf --iteration-time 1", "--days '-inf'"},
      {"diagnose {D}/garbage.json --min-z nan", "--min-z 'nan'"},
  });
}
