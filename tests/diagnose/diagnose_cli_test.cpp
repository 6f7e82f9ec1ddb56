// `twinscale diagnose` and `twinscale report` end to end on simulated runs: a slow GPU
// injected through --gpu-speed-file is named (exit 4), a healthy run gives exit 0, bad
// input exits 1 naming the path, and the report is one self-contained page.
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli_runner.hpp"

using namespace twinscale;
namespace fs = std::filesystem;

namespace {

const std::string kJob = "--preset tiny-1f1b --gpus 32 --global-batch 32 --mode analytic --every-rank";

} // namespace

TEST_CASE("diagnose cli: a GPU 8 % slower in a simulated run is the straggler, a healthy run has no finding") {
  const fs::path dir = test::scratch_dir("diagnose-cli");
  test::write_text(dir / "speeds.csv", "scope,index,factor\nrank,13,0.925\n");
  auto sim = test::run_cli_split("simulate " + kJob + " --gpu-speed-file " + (dir / "speeds.csv").string() +
                                     " --per-rank-csv " + (dir / "slow.csv").string() + " --json",
                                 dir);
  REQUIRE(sim.code == 0);
  auto d = test::run_cli_split("diagnose " + (dir / "slow.csv").string() + " --json", dir);
  INFO(d.out << d.err);
  REQUIRE(d.code == 4);
  const auto j = nlohmann::json::parse(d.out);
  REQUIRE(!j.at("findings").empty());
  CHECK(j["findings"][0]["kind"] == "straggler");
  CHECK(j["findings"][0]["ranks"] == nlohmann::json::array({13}));
  CHECK(j["findings"][0]["excess"].get<double>() == Approx(0.081).margin(0.01));
  size_t stragglers = 0;
  for (const auto& f : j["findings"]) stragglers += f["kind"] == "straggler";
  CHECK(stragglers == 1);
  const auto table = test::run_cli_split("diagnose " + (dir / "slow.csv").string(), dir);
  CHECK(table.code == 4);
  CHECK_THAT(table.out, Catch::Contains("straggler") && Catch::Contains("host1"));

  sim = test::run_cli_split("simulate " + kJob + " --per-rank-csv " + (dir / "ok.csv").string() + " --json", dir);
  REQUIRE(sim.code == 0);
  d = test::run_cli_split("diagnose " + (dir / "ok.csv").string(), dir);
  INFO(d.out << d.err);
  CHECK(d.code == 0);
  CHECK_THAT(d.out, Catch::Contains("nothing found"));

  // Two steps of one job: the straggler is still found, after 1 step.
  d = test::run_cli_split("diagnose " + (dir / "slow.csv").string() + " " + (dir / "slow.csv").string() + " --json",
                          dir);
  REQUIRE(d.code == 4);
  CHECK(nlohmann::json::parse(d.out)["steps"] == 2);
  fs::remove_all(dir);
}

TEST_CASE("diagnose cli: unreadable input exits 1 naming the path and what is valid") {
  const fs::path dir = test::scratch_dir("diagnose-bad");
  auto r = test::run_cli_split("diagnose " + (dir / "nope.json").string(), dir);
  CHECK(r.code == 1);
  CHECK(r.says("nope.json"));
  test::write_text(dir / "bad.csv", "rank,tp,pp,dp,forward_s,backward_s,comm_wait_s\n0,0,0,0,1,x,0\n");
  r = test::run_cli_split("diagnose " + (dir / "bad.csv").string(), dir);
  CHECK(r.code == 1);
  CHECK(r.says("bad.csv:2 column backward_s"));
  fs::create_directories(dir / "empty-run");
  r = test::run_cli_split("diagnose " + (dir / "empty-run").string(), dir);
  CHECK(r.code == 1);
  CHECK(r.says("trace.json"));
  r = test::run_cli_split("report " + (dir / "bad.csv").string() + " -o " + (dir / "r.html").string(), dir);
  CHECK(r.code == 1);
  CHECK(!fs::exists(dir / "r.html"));
  test::write_text(dir / "one.csv", "rank,tp,pp,dp,forward_s,backward_s,comm_wait_s\n0,0,0,0,1,1,0\n");
  r = test::run_cli_split("report " + (dir / "one.csv").string() + " --campaign " + (dir / "bad.csv").string() +
                              " -o " + (dir / "r.html").string(),
                          dir);
  CHECK(r.code == 1);
  CHECK(r.says("not the output of twinscale campaign"));
  CHECK(!fs::exists(dir / "r.html"));
  fs::remove_all(dir);
}

TEST_CASE("report cli: a self-contained page with every section, from a trace") {
  const fs::path dir = test::scratch_dir("report-cli");
  test::write_text(dir / "speeds.csv", "scope,index,factor\nrank,5,0.9\n");
  const auto sim =
      test::run_cli_split("simulate --preset tiny-1f1b --mode analytic --every-rank --gpu-speed-file " +
                              (dir / "speeds.csv").string() + " --trace " + (dir / "t.json").string() + " --json",
                          dir);
  REQUIRE(sim.code == 0);
  const auto r = test::run_cli_split(
      "report " + (dir / "t.json").string() + " --layout 2x2x2 -o " + (dir / "r.html").string(), dir);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string html = test::slurp(dir / "r.html");
  for (const char* id :
       {"summary", "breakdown", "heatmap", "grid", "timeline", "links", "campaign", "findings", "run-data"})
    CHECK_THAT(html, Catch::Contains(std::string("id=\"") + id + "\""));
  // Offline: nothing is loaded from elsewhere; the one address is the link to Perfetto's
  // trace viewer (followed only when clicked).
  CHECK_THAT(html, !Catch::Contains("<script src") && !Catch::Contains("<link ") && !Catch::Contains("@import"));
  std::string rest = html;
  for (size_t at = rest.find("https://ui.perfetto.dev"); at != std::string::npos;
       at = rest.find("https://ui.perfetto.dev"))
    rest.erase(at, 23);
  CHECK_THAT(rest, !Catch::Contains("https://"));
  // Deterministic: the same inputs write the same bytes.
  REQUIRE(test::run_cli_split(
              "report " + (dir / "t.json").string() + " --layout 2x2x2 -o " + (dir / "r2.html").string(), dir)
              .code == 0);
  CHECK(test::slurp(dir / "r2.html") == html);
  fs::remove_all(dir);
}

TEST_CASE("diagnose cli: a link degraded by a fault plan is named from the flow mode's link loads") {
  const fs::path dir = test::scratch_dir("diagnose-links");
  test::write_text(dir / "plan.toml",
                   "[[event]]\nkind = \"link-degraded\"\nlink = \"server1.nic0-tor0.r0#0\"\nbandwidth_factor = 0.25\n");
  const std::string job = "--preset tiny-1f1b --gpus 32 --global-batch 32 --every-rank --per-rank-csv " +
                          (dir / "r.csv").string() + " --link-csv " + (dir / "l.csv").string();
  auto sim = test::run_cli_split("simulate " + job + " --mode flow --faults " + (dir / "plan.toml").string(), dir);
  INFO(sim.err);
  REQUIRE(sim.code == 0);
  auto d = test::run_cli_split(
      "diagnose " + (dir / "r.csv").string() + " --links " + (dir / "l.csv").string() + " --json", dir);
  INFO(d.out << d.err);
  REQUIRE(d.code == 4);
  const auto j = nlohmann::json::parse(d.out);
  std::vector<std::string> links;
  for (const auto& f : j["findings"])
    if (f["kind"] == "slow_link") links.push_back(f["detail"].get<std::string>());
  REQUIRE(links.size() == 1); // the NIC link and the PCIe link before it carry the same flows: one finding
  CHECK_THAT(links[0], Catch::Contains("server1.nic0-tor0.r0#0"));
  auto report = test::run_cli_split("report " + (dir / "r.csv").string() + " --links " + (dir / "l.csv").string() +
                                        " -o " + (dir / "r.html").string(),
                                    dir);
  REQUIRE(report.code == 0);
  CHECK_THAT(test::slurp(dir / "r.html"), Catch::Contains("server1.nic0-tor0.r0#0"));
  // link loads come from the flow engine only
  sim = test::run_cli_split("simulate " + job + " --mode analytic", dir);
  CHECK(sim.code == 1);
  CHECK_THAT(sim.err, Catch::Contains("--link-csv") && Catch::Contains("--mode flow"));
  fs::remove_all(dir);
}
