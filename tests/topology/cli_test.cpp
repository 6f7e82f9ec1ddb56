// The `twinscale topology` CLI, run as a process: JSON for megascale-ampere checked
// against the hand calculation, exit codes, and the GraphViz output.
#include <catch2/catch.hpp>

#include "tests/cli_runner.hpp"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

namespace {

using Run = twinscale::test::CliResult;

Run run_cli(const std::string& args) {
  return twinscale::test::run_cli(args, twinscale::test::Capture::StdoutAndStderr);
}

} // namespace

TEST_CASE("cli: topology show --json for megascale-ampere at 12,288 GPUs", "[cli]") {
  const Run r = run_cli("topology show megascale-ampere --gpus 12288 --json");
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["cluster"] == "megascale-ampere");
  CHECK(j["gpus"] == 12288);
  CHECK(j["servers"] == 1536);
  CHECK(j["switches"]["tor"] == 192);
  CHECK(j["switches"]["aggregation"] == 256);
  CHECK(j["switches"]["spine"] == 128);
  CHECK(j["switches"]["total"] == 576);
  CHECK(j["links"]["nic-tor"]["count"] == 12288);
  CHECK(j["links"]["tor-aggregation"]["count"] == 6144);
  CHECK(j["links"]["aggregation-spine"]["count"] == 8192);
  CHECK(j["links_total"] == 51200);
  CHECK(j["bisection_bw_bytes_per_s"].get<double>() == Approx(153.6e12));
  CHECK(j["diameter_links"] == 8);
  CHECK(j["rails_detail"].size() == 8);
  CHECK(j["shape"]["servers_per_tor"] == 64);
  CHECK(j["shape"]["spines_per_plane"] == 4);
  // deterministic: byte-identical on a second run
  CHECK(run_cli("topology show --preset megascale-ampere --gpus 12288 --json").out == r.out);
}

TEST_CASE("cli: topology show table and errors", "[cli]") {
  const Run table = run_cli("topology show tiny-3tier");
  CHECK(table.rc == 0);
  CHECK_THAT(table.out, Catch::Contains("switches total 20") && Catch::Contains("bisection"));
  const Run bad = run_cli("topology show no-such-cluster");
  CHECK(bad.rc == 1);
  CHECK_THAT(bad.out, Catch::Contains("neither a preset nor a file"));
  const Run big = run_cli("topology show megascale-ampere --gpus 300000");
  CHECK(big.rc == 1);
  CHECK_THAT(big.out, Catch::Contains("131072 GPUs"));
  const Run both = run_cli("topology show tiny-2tier --preset tiny-3tier");
  CHECK(both.rc == 2);
  CHECK_THAT(both.out, Catch::Contains("exactly one of CLUSTER"));
  CHECK(run_cli("topology show").rc == 2);
  const Run usage = run_cli("topology show tiny-2tier --no-such-flag");
  CHECK(usage.rc == 2);
}

TEST_CASE("cli: --dot writes GraphViz for small fabrics and refuses big ones", "[cli]") {
  const auto path = twinscale::test::scratch_dir("topology-cli") / "fabric.dot";
  const Run ok = run_cli("topology show tiny-2tier --dot " + path.string());
  REQUIRE(ok.rc == 0);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK_THAT(ss.str(), Catch::StartsWith("graph \"tiny-2tier\"") && Catch::Contains("\"tor1.r1\" -- \"spine1\""));
  std::filesystem::remove(path);
  const Run refused = run_cli("topology show megascale-ampere --dot " + path.string());
  CHECK(refused.rc == 1);
  CHECK_THAT(refused.out, Catch::Contains("small fabrics"));
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("cli: topology ecmp reports collisions (M11)", "[cli]") {
  const Run multi = run_cli("topology ecmp megascale-ampere --job 8x16x8 --json");
  const Run single = run_cli("topology ecmp megascale-ampere-single-rail --job 8x16x8 --json");
  REQUIRE(multi.rc == 0);
  REQUIRE(single.rc == 0);
  const auto m = nlohmann::json::parse(multi.out), s = nlohmann::json::parse(single.out);
  CHECK(m["hash"]["worst_collision_factor"].get<double>() < s["hash"]["worst_collision_factor"].get<double>());
  CHECK(run_cli("topology ecmp tiny-2tier --job 3x1x1").rc == 1);
  CHECK(run_cli("topology ecmp tiny-2tier --job 8by4").rc == 1);
}
