#include <catch2/catch.hpp>

#include "tests/cli_runner.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {
using Result = twinscale::test::CliResult;
Result run(const std::string& args) {
  return twinscale::test::run_cli(args, twinscale::test::Capture::StdoutAndStderr);
}
} // namespace

TEST_CASE("fault CLI: campaign prints ETTR and is deterministic", "[faults][cli]") {
  const auto a = run("campaign --preset gpt-175b-megascale --iteration-time 10 --days 7 --seeds 3 --json");
  const auto b = run("campaign --preset gpt-175b-megascale --iteration-time 10 --days 7 --seeds 3 --json");
  REQUIRE(a.rc == 0);
  CHECK(a.out == b.out);
  CHECK(a.out.find("\"ettr\"") != std::string::npos);
  const auto t =
      run("campaign --preset gpt-175b-megascale --iteration-time 10 --days 7 --seeds 2 --recovery megatron-baseline");
  REQUIRE(t.rc == 0);
  CHECK(t.out.find("ETTR") != std::string::npos);
  CHECK(t.out.find("Faulty GPU") != std::string::npos);
}

TEST_CASE("fault CLI: --out writes JSON and CSVs next to each other", "[faults][cli]") {
  const auto dir = twinscale::test::scratch_dir("fault-cli") / "out";
  const auto r =
      run("campaign --preset gpt-175b-megascale --iteration-time 10 --days 3 --seeds 2 --out " + dir.string());
  REQUIRE(r.rc == 0);
  for (const char* f : {"campaign.json", "campaign_states.csv", "campaign_causes.csv"})
    CHECK(std::filesystem::exists(dir / f));
  std::ifstream states(dir / "campaign_states.csv");
  std::string header;
  std::getline(states, header);
  CHECK(header == "state,hours_mean,hours_ci95,share");
  std::filesystem::remove_all(dir);
}

TEST_CASE("fault CLI: tune-checkpoint reports Young and Daly", "[faults][cli]") {
  const auto r = run("tune-checkpoint --preset gpt-175b-megascale --iteration-time 10 --days 7 --seeds 3 --points 6");
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("Young") != std::string::npos);
  CHECK(r.out.find("Daly") != std::string::npos);
}

TEST_CASE("fault CLI: bad input exits 1 with the reason, usage errors exit 2", "[faults][cli][errors]") {
  auto r = run("campaign --preset gpt-175b-megascale --iteration-time 10 --faults no-such-model");
  CHECK(r.rc == 1);
  CHECK(r.out.find("llama3-405b") != std::string::npos);
  r = run("campaign --preset gpt-175b-megascale --iteration-time 10 --checkpoint-interval 1");
  CHECK(r.rc == 1);
  CHECK(r.out.find("shorter than the checkpoint itself") != std::string::npos);
  r = run("campaign --preset gpt-175b-megascale --iteration-time 0");
  CHECK(r.rc == 1);
  r = run("campaign --iteration-time 10"); // no job: a usage error
  CHECK(r.rc == 2);
  CHECK(r.out.find("--preset") != std::string::npos);
  r = run("campaign --preset gpt-175b-megascale --iteration-time 10 --sim-mode warp");
  CHECK(r.rc == 2); // not a simulator mode
}
