// The binary trace end to end: `simulate --trace t.tstrace` (streamed, every rank, both
// modes), `diagnose` and `report` on it find what they find on the Chrome trace of the
// same run, `trace convert` gives that Chrome trace back, the same run writes the same
// bytes, and a damaged file exits 1 naming it.
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "schedules/trace.hpp"
#include "tests/cli_runner.hpp"

using namespace twinscale;
namespace fs = std::filesystem;

namespace {

// rank 13 runs 8 % slow, and a NIC link is degraded to a quarter of its bandwidth
const std::string kJob = "--preset tiny-1f1b --gpus 32 --global-batch 32 --mode analytic --every-rank";

std::string findings_of(const std::string& json_text) {
  const auto j = nlohmann::json::parse(json_text);
  std::string s;
  for (const auto& f : j.at("findings")) s += f.at("kind").get<std::string>() + " " + f.at("ranks").dump() + "; ";
  return s;
}

} // namespace

TEST_CASE("binary trace cli: diagnose, convert and report agree with the Chrome trace of the same run") {
  const fs::path dir = test::scratch_dir("bt-cli");
  test::write_text(dir / "speeds.csv", "scope,index,factor\nrank,13,0.925\n");
  test::write_text(dir / "plan.toml",
                   "[[event]]\nkind = \"link-degraded\"\nlink = \"server1.nic0-tor0.r0#0\"\nbandwidth_factor = 0.25\n");
  const std::string job = kJob + " --gpu-speed-file " + (dir / "speeds.csv").string() + " --faults " +
                          (dir / "plan.toml").string() + " --json --trace ";
  for (const char* f : {"t.tstrace", "t2.tstrace", "t.json"}) {
    const auto sim = test::run_cli_split("simulate " + job + (dir / f).string(), dir);
    INFO(sim.err);
    REQUIRE(sim.code == 0);
  }
  // deterministic: the same run writes the same bytes
  CHECK(test::slurp(dir / "t.tstrace") == test::slurp(dir / "t2.tstrace"));
  CHECK(test::slurp(dir / "t.tstrace").size() * 10 < test::slurp(dir / "t.json").size());

  const auto info = test::run_cli_split("trace info " + (dir / "t.tstrace").string(), dir);
  REQUIRE(info.code == 0);
  std::smatch m;
  // the one layout notation: printed "tp A × dp B × pp C", given back in its named form
  REQUIRE(std::regex_search(info.out, m, std::regex("\\(tp ([0-9]+) × dp ([0-9]+) × pp ([0-9]+)\\)")));
  const std::string layout = "tp" + m[1].str() + "xdp" + m[2].str() + "xpp" + m[3].str();

  const auto bin = test::run_cli_split("diagnose " + (dir / "t.tstrace").string() + " --json", dir);
  const auto js = test::run_cli_split("diagnose " + (dir / "t.json").string() + " --layout " + layout + " --json", dir);
  INFO(bin.out << bin.err << js.out << js.err);
  REQUIRE(bin.code == 4);
  REQUIRE(js.code == 4);
  CHECK(findings_of(bin.out) == findings_of(js.out));
  CHECK_THAT(findings_of(bin.out), Catch::Contains("straggler [13]"));
  const auto jb = nlohmann::json::parse(bin.out), jj = nlohmann::json::parse(js.out);
  REQUIRE(jb["findings"].size() == jj["findings"].size());
  for (size_t i = 0; i < jb["findings"].size(); ++i)
    CHECK(jb["findings"][i]["excess"].get<double>() == Approx(jj["findings"][i]["excess"].get<double>()).margin(1e-4));
  // every rank's score: peer group, excess, z, late launches
  REQUIRE(jb["rank_scores"].size() == jj["rank_scores"].size());
  for (size_t i = 0; i < jb["rank_scores"].size(); ++i) {
    const auto &a = jb["rank_scores"][i], &b = jj["rank_scores"][i];
    CHECK(a.at("rank") == b.at("rank"));
    CHECK(a.at("peer_group") == b.at("peer_group"));
    CHECK(a.at("excess").get<double>() == Approx(b.at("excess").get<double>()).margin(1e-6));
    CHECK(a.at("late_launches") == b.at("late_launches"));
  }

  // trace convert: the Chrome trace written directly, event for event (ns rounding)
  const auto conv =
      test::run_cli_split("trace convert " + (dir / "t.tstrace").string() + " " + (dir / "c.json").string(), dir);
  INFO(conv.err);
  REQUIRE(conv.code == 0);
  const auto direct = schedules::read_chrome_trace_file((dir / "t.json").string());
  const auto converted = schedules::read_chrome_trace_file((dir / "c.json").string());
  REQUIRE(direct.size() == converted.size());
  std::map<std::pair<int64_t, uint32_t>, const schedules::TraceRecord*> by_key;
  for (const auto& r : direct) by_key[{r.rank, r.op_index}] = &r;
  size_t same = 0;
  for (const auto& r : converted) {
    const auto* d = by_key.at({r.rank, r.op_index});
    same += r.name == d->name && r.kind == d->kind && r.stream == d->stream && r.labels.phase == d->labels.phase &&
            r.labels.iteration == d->labels.iteration && r.labels.micro_batch == d->labels.micro_batch &&
            r.bytes == d->bytes && r.failed == d->failed && std::abs(r.start_s - d->start_s) <= 1.5e-9 &&
            std::abs(r.duration_s - d->duration_s) <= 1.5e-9;
  }
  CHECK(same == direct.size());
  const auto some = test::run_cli_split(
      "trace convert " + (dir / "t.tstrace").string() + " " + (dir / "some.json").string() + " --ranks 0-3,13", dir);
  REQUIRE(some.code == 0);
  std::set<int64_t> ranks;
  for (const auto& r : schedules::read_chrome_trace_file((dir / "some.json").string())) ranks.insert(r.rank);
  CHECK(ranks == std::set<int64_t>{0, 1, 2, 3, 13});

  // report: the timeline of the named ranks is read back from the binary trace
  const auto rep =
      test::run_cli_split("report " + (dir / "t.tstrace").string() + " -o " + (dir / "r.html").string(), dir);
  INFO(rep.err);
  REQUIRE(rep.code == 0);
  const std::string html = test::slurp(dir / "r.html");
  CHECK_THAT(html, Catch::Contains("id=\"timeline\"") && Catch::Contains("\"ranks\":[0,13"));
  CHECK_THAT(html, Catch::Contains("mlp.fc1") || Catch::Contains("attn"));
  fs::remove_all(dir);
}

TEST_CASE("binary trace cli: the flow mode streams the trace from its forked run, bad files exit 1 naming them") {
  const fs::path dir = test::scratch_dir("bt-flow");
  const auto sim = test::run_cli_split(
      "simulate --preset tiny-1f1b --mode flow --every-rank --json --trace " + (dir / "f.tstrace").string(), dir);
  INFO(sim.err);
  REQUIRE(sim.code == 0);
  std::smatch ops;
  REQUIRE(std::regex_search(sim.err, ops, std::regex("ranks executed, ([0-9]+) ops")));
  const auto info = test::run_cli_split("trace info " + (dir / "f.tstrace").string(), dir);
  REQUIRE(info.code == 0);
  CHECK_THAT(info.out, Catch::Contains("events      " + ops[1].str() + " "));
  CHECK(test::run_cli_split("diagnose " + (dir / "f.tstrace").string(), dir).code == 0);
  for (const auto& e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);

  const std::string b = test::slurp(dir / "f.tstrace");
  test::write_text(dir / "cut.tstrace", b.substr(0, b.size() / 2));
  auto d = test::run_cli_split("diagnose " + (dir / "cut.tstrace").string(), dir);
  CHECK(d.code == 1);
  CHECK(d.says("cut.tstrace"));
  CHECK(d.says("truncated"));
  d = test::run_cli_split(
      "trace convert " + (dir / "f.tstrace").string() + " " + (dir / "o.json").string() + " --ranks 0-99999", dir);
  CHECK(d.code == 1);
  CHECK(d.says("--ranks"));
  d = test::run_cli_split("trace convert " + (dir / "f.tstrace").string() + " " + (dir / "o.tstrace").string(), dir);
  CHECK(d.code == 1);
  CHECK(d.says("Chrome trace"));
  CHECK_FALSE(fs::exists(dir / "o.json"));
  fs::remove_all(dir);
}
