// The `twinscale simulate` command: JSON keys, byte-identical output for equal inputs,
// usage and input errors.
#include <catch2/catch.hpp>

#include "tests/cli_runner.hpp"

#include <cstdio>
#include <sstream>
#include <string>

namespace {

using Result = twinscale::test::CliResult;

Result run(const std::string& args) { return twinscale::test::run_cli(args, twinscale::test::Capture::StdoutOnly); }

} // namespace

TEST_CASE("twinscale simulate --json gives the documented keys, deterministically", "[sim][cli]") {
  for (const char* mode : {"analytic", "flow"}) {
    const auto a = run(std::string("simulate --preset tiny-megascale --json --mode ") + mode);
    const auto b = run(std::string("simulate --preset tiny-megascale --json --mode ") + mode);
    REQUIRE(a.rc == 0);
    for (const char* key : {"\"iteration_time_s\"", "\"tokens_per_s\"", "\"mfu\"", "\"breakdown\"", "\"per_stage\""})
      CHECK(a.out.find(key) != std::string::npos);
    CHECK(a.out == b.out);
  }
}

TEST_CASE("twinscale simulate: usage errors exit 2, bad input exits 1", "[sim][cli]") {
  CHECK(run("simulate").rc == 2);                                // no job
  CHECK(run("simulate --preset tiny-1f1b --mode warp").rc == 2); // bad mode
  CHECK(run("simulate --preset no-such-job").rc == 1);           // unknown preset
  CHECK(run("simulate --preset tiny-1f1b --cluster no-such-cluster").rc == 1);
  CHECK(run("simulate --preset tiny-1f1b --trace /tmp/x.json --ranks 5-2").rc == 1);
}

TEST_CASE("twinscale simulate --every-rank with per-GPU speeds writes every rank's times", "[sim][cli][every_rank]") {
  const std::string csv = (twinscale::test::scratch_dir("every-rank") / "ranks.csv").string();
  const auto a = run("simulate --preset tiny-megascale --mode analytic --every-rank --gpu-speed-dist normal:0.05 "
                     "--speed-seed 3 --json --per-rank-csv " +
                     csv);
  REQUIRE(a.rc == 0);
  CHECK(a.out.find("\"executed_ranks\": 8") != std::string::npos);
  std::FILE* f = std::fopen(csv.c_str(), "r");
  REQUIRE(f != nullptr);
  int lines = 0;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) lines += c == '\n' ? 1 : 0;
  std::fclose(f);
  std::remove(csv.c_str());
  CHECK(lines == 9); // header + 8 ranks
  CHECK(run("simulate --preset tiny-megascale --gpu-speed-dist gauss:1").rc == 1);
  CHECK(run("simulate --preset tiny-megascale --gpu-speed-file /nonexistent/speeds.csv").rc == 1);
}

TEST_CASE("twinscale simulate: the speed-variation shortcut is refused when every rank is executed", "[sim][cli]") {
  // The order statistic stands in for unexecuted ranks; with every rank executed the
  // per-GPU speeds themselves must be given (and the two would count variation twice).
  const auto r = twinscale::test::run_cli("simulate --preset tiny-1f1b --mode analytic --every-rank --speed-variation",
                                          twinscale::test::Capture::StdoutAndStderr);
  CHECK(r.rc == 1);
  CHECK(r.out.find("--speed-variation") != std::string::npos);
  CHECK(r.out.find("--gpu-speed-dist") != std::string::npos);
  const auto ok = twinscale::test::run_cli("simulate --preset tiny-1f1b --mode analytic --speed-variation",
                                           twinscale::test::Capture::StdoutOnly);
  CHECK(ok.rc == 0);
}

TEST_CASE("twinscale simulate: slow hosts are validated and slow the job down", "[sim][cli]") {
  using twinscale::test::Capture;
  using twinscale::test::run_cli;
  const auto bad = run_cli("simulate --preset tiny-1f1b --mode analytic --speed-variation --slow-host-fraction 1.5",
                           Capture::StdoutAndStderr);
  CHECK(bad.rc == 1);
  CHECK(bad.out.find("--slow-host-fraction") != std::string::npos);
  const auto factor = run_cli("simulate --preset tiny-1f1b --mode analytic --speed-variation --slow-host-fraction 0.5 "
                              "--slow-host-factor 0.5",
                              Capture::StdoutAndStderr);
  CHECK(factor.rc == 1);
  CHECK(factor.out.find("--slow-host-factor") != std::string::npos);
  const auto alone =
      run_cli("simulate --preset tiny-1f1b --mode analytic --slow-host-fraction 0.5", Capture::StdoutAndStderr);
  CHECK(alone.rc == 1);
  CHECK(alone.out.find("--speed-variation") != std::string::npos);
  const auto time_of = [](const std::string& out) {
    const auto at = out.find("iteration time");
    REQUIRE(at != std::string::npos);
    return std::stod(out.substr(out.find_first_of("0123456789", at)));
  };
  const auto plain = run_cli("simulate --preset tiny-1f1b --mode analytic --speed-variation", Capture::StdoutOnly);
  const auto slow = run_cli("simulate --preset tiny-1f1b --mode analytic --speed-variation --slow-host-fraction 1 "
                            "--slow-host-factor 1.5",
                            Capture::StdoutOnly);
  REQUIRE(plain.rc == 0);
  REQUIRE(slow.rc == 0);
  CHECK(time_of(slow.out) > 1.2 * time_of(plain.out));
}

TEST_CASE("twinscale simulate --every-rank by classes says so, and TWINSCALE_PER_OP=1 prints the same figures",
          "[sim][cli][every_rank]") {
  const auto dir = twinscale::test::scratch_dir("replica-classes");
  const std::string speeds = (dir / "speeds.csv").string();
  twinscale::test::write_text(dir / "speeds.csv", "scope,index,factor\nrank,5,0.9\n");
  const std::string args = "simulate --preset tiny-megascale --gpus 32 --global-batch 64 --mode analytic --every-rank "
                           "--json --gpu-speed-file " +
                           speeds;
  const auto c = twinscale::test::run_cli_split(args, dir);
  REQUIRE(c.code == 0);
  CHECK(c.says("ranks executed (one replica of each of 2 classes of identical replicas, standing for all 32"));
  CHECK(c.out.find("\"replica_classes\": 2") != std::string::npos);
  const auto f = twinscale::test::run_cli_split(args, dir, "TWINSCALE_PER_OP=1 ");
  REQUIRE(f.code == 0);
  CHECK(f.says("32 ranks executed, "));
  CHECK(f.out.find("\"replica_classes\": 0") != std::string::npos);
  // every line but the run's statistics is the same
  auto figures = [](const std::string& json) {
    std::string kept, line;
    std::istringstream in(json);
    while (std::getline(in, line))
      if (line.find("executed") == std::string::npos && line.find("replica_classes") == std::string::npos)
        kept += line + "\n";
    return kept;
  };
  CHECK(figures(c.out) == figures(f.out));
  CHECK(figures(c.out).size() > 1000);
}
