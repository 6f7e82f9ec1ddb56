// A simulated run names each rank's host once, the same way everywhere: its run
// directory's state files (rank-<r>.json), its Chrome trace (process_name "rank R (HOST)",
// args.host) and its binary trace (version 2) agree, as the fabric names the rank's
// server; `trace info`, `trace convert`, `compare` and `diagnose` keep the names; traces
// stay deterministic, and a trace without hosts (one written before them) still loads.
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "schedules/binary_trace.hpp"
#include "schedules/trace.hpp"
#include "tests/cli_runner.hpp"

using namespace twinscale;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// tiny-2tier: 8 GPUs a server, linear placement: rank 13 is on the second server
const std::string kJob = "--preset tiny-1f1b --gpus 32 --global-batch 32 --mode analytic --every-rank";

/// A hung simulated run into `run`, its trace written to `trace`.
void hung_run(const fs::path& dir, const fs::path& run, const fs::path& trace) {
  auto ok = test::run_cli_split("simulate " + kJob + " --json", dir);
  REQUIRE(ok.code == 0);
  const double iteration = nlohmann::json::parse(ok.out).at("iteration_time_s").get<double>();
  auto sim = test::run_cli_split("simulate " + kJob + " --hang-rank 13 --hang-at-s " + std::to_string(iteration / 2) +
                                     " --run-dir " + run.string() + " --trace " + trace.string(),
                                 dir);
  INFO(sim.out << sim.err);
  REQUIRE(sim.code == 5); // incomplete: records written
}

/// The host a run directory's state file of `rank` names (records/run_dir.hpp).
std::string state_host(const fs::path& run, int64_t rank) {
  return nlohmann::json::parse(test::slurp(run / ("rank-" + std::to_string(rank) + ".json"))).at("host");
}

} // namespace

TEST_CASE("trace hosts: a simulated run directory and its traces name the same host for a rank", "[trace]") {
  const fs::path dir = test::scratch_dir("trace-hosts");
  const fs::path run = dir / "run";
  hung_run(dir, run, run / "trace.json");
  std::vector<std::string> hosts;
  const auto records = schedules::read_chrome_trace_file((run / "trace.json").string(), &hosts);
  REQUIRE(!records.empty());
  REQUIRE(hosts.size() == 32);
  for (int64_t r : {0, 7, 8, 13, 31}) CHECK(state_host(run, r) == hosts[static_cast<size_t>(r)]);
  CHECK(hosts[13] == "server1"); // the fabric's name of the server (fault plans use it too)
  CHECK(hosts[31] == "server3");
  const std::string text = test::slurp(run / "trace.json");
  CHECK_THAT(text, Contains(R"x("args":{"name":"rank 13 (server1)","host":"server1"})x"));

  // the binary trace of the same run: version 2, the same hosts
  const fs::path binary_run = dir / "binary";
  hung_run(dir, binary_run, binary_run / "trace.tstrace");
  const schedules::BinaryTraceReader reader((binary_run / "trace.tstrace").string());
  CHECK(reader.version() == 2);
  CHECK(reader.hosts() == hosts);
  CHECK(state_host(binary_run, 13) == reader.hosts()[13]);
  auto info = test::run_cli_split("trace info " + (binary_run / "trace.tstrace").string() + " --json", dir);
  REQUIRE(info.code == 0);
  const auto j = nlohmann::json::parse(info.out);
  CHECK(j["version"] == 2);
  CHECK(j["hosts"] == nlohmann::json::array({"server0", "server1", "server2", "server3"}));
  CHECK(j["host_of_rank"][13] == "server1");
  info = test::run_cli_split("trace info " + (binary_run / "trace.tstrace").string(), dir);
  CHECK_THAT(info.out, Contains("hosts       4 (server0 … server3)"));
  auto conv = test::run_cli_split("trace convert " + (binary_run / "trace.tstrace").string() + " " +
                                      (dir / "c.json").string() + " --ranks 12-13",
                                  dir);
  REQUIRE(conv.code == 0);
  std::vector<std::string> converted;
  schedules::read_chrome_trace_file((dir / "c.json").string(), &converted);
  REQUIRE(converted.size() == 14);
  CHECK(converted[13] == "server1");
  CHECK(converted[0].empty()); // not converted

  // diagnose places the ranks on the hosts the run names (not on --gpus-per-host groups)
  auto d = test::run_cli_split("diagnose " + run.string() + " --json", dir);
  INFO(d.out << d.err);
  REQUIRE(d.code == 4);
  const auto dj = nlohmann::json::parse(d.out);
  REQUIRE(!dj["findings"].empty());
  CHECK(dj["findings"][0]["ranks"] == nlohmann::json::array({13}));
  CHECK(dj["findings"][0]["host"] == "server1");
  CHECK(dj["rank_scores"][13]["host"] == "server1");
  CHECK(dj["rank_scores"][31]["host"] == "server3");
  fs::remove_all(dir);
}

TEST_CASE("trace hosts: traces stay deterministic and compare prints each rank's host", "[trace]") {
  const fs::path dir = test::scratch_dir("trace-hosts-det");
  for (const char* name : {"a.json", "b.json"})
    REQUIRE(test::run_cli_split("simulate " + kJob + " --trace " + (dir / name).string(), dir).code == 0);
  CHECK(test::slurp(dir / "a.json") == test::slurp(dir / "b.json"));
  for (const char* name : {"a.tstrace", "b.tstrace"})
    REQUIRE(test::run_cli_split("simulate " + kJob + " --trace " + (dir / name).string(), dir).code == 0);
  CHECK(test::slurp(dir / "a.tstrace") == test::slurp(dir / "b.tstrace"));

  const auto c = test::run_cli_split("compare " + (dir / "a.json").string() + " " + (dir / "b.json").string(), dir);
  INFO(c.out << c.err);
  REQUIRE(c.code == 0);
  CHECK_THAT(c.out, Contains("rank   host "));
  CHECK_THAT(c.out, Contains("\n13     server1 "));
  const auto cj =
      test::run_cli_split("compare " + (dir / "a.json").string() + " " + (dir / "b.json").string() + " --json", dir);
  REQUIRE(cj.code == 0);
  const auto j = nlohmann::json::parse(cj.out);
  CHECK(j["ranks"][13]["a_host"] == "server1");
  CHECK(j["ranks"][13]["b_host"] == "server1");
  fs::remove_all(dir);
}

TEST_CASE("trace hosts: a trace without hosts still loads", "[trace]") {
  const fs::path dir = test::scratch_dir("trace-hosts-old");
  // a Chrome trace as written before hosts were recorded
  std::vector<std::string> hosts{"stale"};
  const auto records = schedules::read_chrome_trace_file(
      std::string(TWINSCALE_SOURCE_DIR) + "/fuzz/corpus/trace_json/tiny.json", &hosts);
  CHECK(!records.empty());
  CHECK(hosts.empty());
  // a binary trace written without hosts is a version 1 file, read as before
  const fs::path v2 = dir / "v2.tstrace";
  REQUIRE(test::run_cli_split("simulate " + kJob + " --trace " + v2.string(), dir).code == 0);
  const schedules::BinaryTraceReader with_hosts(v2.string());
  schedules::Trace trace;
  trace.source = with_hosts.source();
  std::vector<schedules::BinaryTraceEvent> evs;
  for (int64_t r = 0; r < with_hosts.world(); ++r) {
    with_hosts.read_rank(r, evs);
    for (const auto& e : evs)
      trace.events.push_back({r, e.op_index, static_cast<double>(e.start_ns) * 1e-9,
                              static_cast<double>(e.start_ns + e.duration_ns) * 1e-9, e.failed});
  }
  const fs::path v1 = dir / "v1.tstrace";
  schedules::write_binary_trace(trace, with_hosts.schedule(), v1.string());
  const schedules::BinaryTraceReader old(v1.string());
  CHECK(old.version() == 1);
  CHECK(old.hosts().empty());
  CHECK(old.events() == with_hosts.events());
  auto info = test::run_cli_split("trace info " + v1.string(), dir);
  CHECK(info.code == 0);
  CHECK_THAT(info.out, Contains("version     1") && Contains("hosts       not recorded"));
  // diagnose of it falls back to --gpus-per-host groups
  auto d = test::run_cli_split("diagnose " + v1.string() + " --json", dir);
  CHECK((d.code == 0 || d.code == 4));
  CHECK(nlohmann::json::parse(d.out)["ranks"] == 32);
  fs::remove_all(dir);
}
