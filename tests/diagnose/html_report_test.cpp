// diagnose/html_report: the page's one-sentence summary, the layout read from a trace's
// collective groups, the aggregation that keeps a 12,288-rank page small, the embedded
// charting library and the error of a build without it. (tests/diagnose/report_chromium.sh
// opens the pages in a browser.)
#include <cstdio>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "diagnose/diagnosis.hpp"
#include "diagnose/error.hpp"
#include "diagnose/html_report.hpp"
#include "diagnose/report/assets.hpp"

using namespace twinscale;

namespace {

/// A per-rank CSV of tp·pp·dp ranks: forward 1 s and backward 2 s times `slow(rank)`.
template <class F>
std::string csv(int tp, int pp, int dp, F slow) {
  std::string t = "rank,tp,pp,dp,forward_s,backward_s,comm_wait_s\n";
  char line[200];
  for (int r = 0; r < tp * pp * dp; ++r) {
    const double f = slow(r);
    std::snprintf(line, sizeof line, "%d,%d,%d,%d,%.9f,%.9f,%.9f\n", r, r % tp, r / (tp * dp), (r / tp) % dp, 1.0 * f,
                  2.0 * f, 0.1 + 0.01 * (r % 3));
    t += line;
  }
  return t;
}

/// The JSON the page carries (<script id="run-data">).
nlohmann::json page_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"run-data\">";
  const size_t a = html.find(open);
  REQUIRE(a != std::string::npos);
  const size_t b = html.find("</script>", a);
  std::string text = html.substr(a + open.size(), b - a - open.size());
  for (size_t at = text.find("<\\/"); at != std::string::npos; at = text.find("<\\/", at)) text.replace(at, 3, "</");
  return nlohmann::json::parse(text);
}

schedules::TraceRecord comm(int64_t rank, const std::string& instance) {
  schedules::TraceRecord r;
  r.rank = rank;
  r.instance = instance;
  return r;
}

} // namespace

TEST_CASE("html report: the summary names the worst straggler and where it sits in the layout") {
  const auto data = diagnose::read_per_rank_csv(
      csv(2, 2, 16, [](int r) { return r == 37  ? 1.08
                                       : r == 3 ? 1.05
                                                : 1.0; }), "s.csv", 8);
  const auto d = diagnose::diagnose_run(data);
  const std::string s = diagnose::report_summary(data, d);
  CHECK_THAT(s,
             Catch::StartsWith("64 ranks, 1 step: found 2 stragglers (the worst, rank 37 at stage 1, DP 2, TP 1, 8.0 % "
                               "slower than its peers)"));
  const auto healthy = diagnose::read_per_rank_csv(csv(2, 2, 16, [](int) { return 1.0; }), "u.csv", 8);
  CHECK_THAT(diagnose::report_summary(healthy, diagnose::diagnose_run(healthy)),
             Catch::EndsWith("nothing abnormal found (no straggler, slow host, slow link or late launcher); per "
                             "rank and step: 1 s forward, 2 s backward, 110 ms comm_wait."));
}

TEST_CASE("html report: a 12,288-rank run is binned before drawing and the page stays small") {
  const auto data =
      diagnose::read_per_rank_csv(csv(8, 8, 192, [](int r) { return r == 4711 ? 1.1 : 1.0; }), "big.csv", 8);
  const auto d = diagnose::diagnose_run(data);
  const std::string html = diagnose::html_report(data, d);
  const auto j = page_data(html);
  // 12,288 ranks in rows of 48 (a divisor of the 1,536-rank stage): 256 rows × 3 phases.
  CHECK(j["heat"]["per"] == 48);
  CHECK(j["heat"]["cells"].size() == 256 * 3);
  CHECK(j["heat"]["stages"].size() == 8);
  // the worst rank of its row is kept: rank 4711 sits in the row of ranks 4704–4751
  bool seen = false;
  for (const auto& c : j["heat"]["cells"])
    if (c[0] == 4704 && c[2] == 0) seen = c[5] == 4711 && c[3].get<double>() > 0.05;
  CHECK(seen);
  // the grid: 8 stages × 192 DP columns, each the slowest of its 8 TP ranks
  CHECK(j["grid"]["by"] == "layout");
  CHECK(j["grid"]["cells"].size() == 8 * 192);
  CHECK(html.size() < 1500000);
  // without a layout (a Kineto trace): peer groups as rows, their members binned alike
  auto no_layout = data;
  no_layout.layout.reset();
  const auto k = page_data(diagnose::html_report(no_layout, d));
  CHECK(k["grid"]["by"] == "peer_group");
  CHECK(k["grid"]["dp_per_column"] == 8);
  CHECK(k["grid"]["cells"].size() == 8 * 192);
  CHECK(k["heat"]["per"] == 48);
}

TEST_CASE("html report: the layout of a trace is read from its collective groups") {
  // tp 2, dp 2, pp 2 (rank = tp + 2·(dp + 2·pp)): tp groups {0,1}, dp groups {0,2}, stage stride 4
  std::vector<schedules::TraceRecord> rec = {comm(0, "tp@0#0"), comm(1, "tp@0#0"),   comm(0, "dp@0#0"),
                                             comm(2, "dp@0#0"), comm(0, "pp:0>4#0"), comm(4, "pp:0>4#0")};
  auto L = diagnose::infer_layout(rec, 8);
  REQUIRE(L);
  CHECK(L->tp == 2);
  CHECK(L->dp == 2);
  CHECK(L->pp == 2);
  // no pipeline messages: one stage of tp × dp
  rec.resize(4);
  L = diagnose::infer_layout(rec, 4);
  REQUIRE(L);
  CHECK((L->tp == 2 && L->dp == 2 && L->pp == 1));
  // groups that do not tile the world: unknown
  CHECK_FALSE(diagnose::infer_layout({comm(0, "tp@0#0"), comm(1, "tp@0#0"), comm(2, "tp@0#0")}, 8));
}

TEST_CASE("html report: the page embeds its charting library, and without one the report is a clear error") {
  const auto data = diagnose::read_per_rank_csv(csv(2, 1, 2, [](int) { return 1.0; }), "u.csv", 8);
  const auto d = diagnose::diagnose_run(data);
  diagnose::ReportOptions o;
  o.chart_library = "";
  try {
    diagnose::html_report(data, d, o);
    FAIL("no error");
  } catch (const diagnose::DiagnoseError& e) {
    CHECK_THAT(e.what(), Catch::Contains("libjs-vega") && Catch::Contains("TWINSCALE_VEGA_DIR"));
  }
  if (!diagnose::report_assets::kChartLibraryFound) {
    WARN("this build has no Vega (libjs-vega): the embedded page is not checked");
    return;
  }
  const std::string html = diagnose::html_report(data, d);
  CHECK_THAT(html, Catch::Contains("tsVegaDefine('vega-view'") && Catch::Contains("tsVegaDefine('vega-parser'"));
  CHECK_THAT(html, !Catch::Contains("<script src") && !Catch::Contains("<link "));
  CHECK(html == diagnose::html_report(data, d)); // deterministic
}

TEST_CASE("html report: a slow link is named with the link its flows share, and both are flagged on the chart") {
  auto data = diagnose::read_per_rank_csv(csv(2, 1, 2, [](int) { return 1.0; }), "r.csv", 8);
  for (const char* name : {"server1.gpu0-server1.nic0#0", "server1.nic0-tor0.r0#0", "server0.nic0-tor0.r0#0"}) {
    diagnose::LinkUse u;
    u.name = name;
    u.direction = "up";
    u.kind = std::string(name).find("gpu") != std::string::npos ? "pcie" : "nic-tor";
    u.busy_fraction = 0.05;
    data.links.push_back(u);
  }
  diagnose::Diagnosis d;
  diagnose::Finding f;
  f.kind = diagnose::FindingKind::SlowLink;
  f.link = "server1.gpu0-server1.nic0#0";
  f.detail = "link server1.gpu0-server1.nic0#0 (pcie): slow; the same flows cross server1.nic0-tor0.r0#0, equally slow";
  d.findings.push_back(f);
  CHECK_THAT(diagnose::report_summary(data, d),
             Catch::EndsWith("found 1 slow link (server1.gpu0-server1.nic0#0 or server1.nic0-tor0.r0#0: the same "
                             "flows cross both)."));
  const auto j = page_data(diagnose::html_report(data, d));
  std::vector<std::string> flagged;
  for (const auto& tier : j["links"])
    for (const auto& l : tier["links"])
      if (l[5] == true) flagged.push_back(l[0]);
  CHECK(flagged == std::vector<std::string>{"server1.gpu0-server1.nic0#0", "server1.nic0-tor0.r0#0"});
}
