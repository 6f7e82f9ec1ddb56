// Study files: every bad input names the file and the key; points are deterministic.
#include <map>
#include <set>

#include <catch2/catch.hpp>

#include "config/error.hpp"
#include "study/points.hpp"
#include "study/study_file.hpp"

using namespace twinscale;
using Catch::Matchers::Contains;

namespace {

const char* kBase = R"(
name = "t"
[base]
job = "tiny-megascale"
gpus = 16
)";

study::StudySpec parse(const std::string& tail) { return study::parse_study(std::string(kBase) + tail, "s.toml"); }

void require_error(const std::string& tail, const std::string& key, const std::string& why) {
  try {
    parse(tail);
    FAIL("no error for: " << tail);
  } catch (const config::ConfigError& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Contains("s.toml"));
    CHECK_THAT(m, Contains(key));
    CHECK_THAT(m, Contains(why));
  }
}

} // namespace

TEST_CASE("study file: axes in canonical order, values typed, defaults", "[study]") {
  const auto s = parse("[axes]\nplacement = [\"linear\", \"random\"]\ntp = [1, 2]\noversubscription = [1, 2.5]\n");
  REQUIRE(s.axes.size() == 3);
  CHECK(s.axes[0].name == "tp"); // canonical order, not file order
  CHECK(s.axes[1].name == "placement");
  CHECK(s.axes[2].name == "oversubscription");
  CHECK(std::get<double>(s.axes[2].values[1]) == 2.5);
  CHECK(std::get<double>(s.axes[2].values[0]) == 1.0);
  CHECK(s.method == study::SampleMethod::Grid);
  CHECK(s.evaluation == study::Evaluation::Simulate);
  CHECK(s.mode == study::SimModeChoice::Analytic);
  CHECK(s.memory_fits);
  CHECK(s.job == "tiny-megascale");
}

TEST_CASE("study file: bad input names file and key", "[study]") {
  require_error("[axes]\ntpp = [1]\n", "axes.tpp", "valid axes");
  require_error("[axes]\ntp = []\n", "axes.tp", "empty");
  require_error("[axes]\ntp = [1, \"2\"]\n", "axes.tp[1]", "integer");
  require_error("[axes]\ntp = [2, 2]\n", "axes.tp[1]", "distinct");
  require_error("[axes]\ntp = [0]\n", "axes.tp[0]", "[1,");
  require_error("[axes]\nplacement = [\"ring\"]\n", "axes.placement[0]", "tor-aware");
  require_error("[axes]\noversubscription = [-1]\n", "axes.oversubscription[0]", "> 0");
  require_error("[axes]\n", "axes", "at least one");
  require_error("[axes]\ntp = [1]\n[sample]\nmethod = \"random\"\n", "sample.points", "missing");
  require_error("[axes]\ntp = [1]\n[sample]\nmethod = \"sobol\"\n", "sample.method", "lhs");
  require_error("[axes]\ntp = [1]\n[sample]\npoints = 4\n", "sample.points", "grid");
  require_error("[axes]\ntp = [1]\n[evaluate]\nmode = \"flow\"\nflow_best = 2\n", "evaluate.flow_best", "analytic");
  require_error("[axes]\ntp = [1]\n[evaluate]\nwhat = \"train\"\n", "evaluate.what", "simulate");
  require_error("[axes]\ntp = [1]\n[filter]\nmemory_fits = true\n", "filter", "unknown key");
  require_error("[axes]\ntp = [1]\n[base]\n", "base", "");
  CHECK_THROWS_AS(study::parse_study("name = \"x\"\n[axes]\ntp = [1]\n", "s.toml"), config::ConfigError); // no [base]
}

TEST_CASE("study points: grid order, random without replacement, lhs, all deterministic", "[study]") {
  const auto grid = parse("[axes]\ntp = [1, 2]\npp = [1, 2, 4]\n");
  const auto g = study::generate_points(grid);
  REQUIRE(g.size() == 6);
  CHECK(study::inputs_json(g[0]) == R"({"tp":1,"pp":1})");
  CHECK(study::inputs_json(g[1]) == R"({"tp":1,"pp":2})"); // last axis fastest
  CHECK(study::inputs_json(g[5]) == R"({"tp":2,"pp":4})");
  CHECK(g[5].id == 5);

  const std::string axes = "[axes]\ntp = [1, 2, 4, 8]\npp = [1, 2, 4, 8]\nmicro_batch = [1, 2, 4, 8]\n";
  const auto r1 = study::generate_points(parse(axes + "[sample]\nmethod = \"random\"\npoints = 20\nseed = 7\n"));
  const auto r2 = study::generate_points(parse(axes + "[sample]\nmethod = \"random\"\npoints = 20\nseed = 7\n"));
  const auto r3 = study::generate_points(parse(axes + "[sample]\nmethod = \"random\"\npoints = 20\nseed = 8\n"));
  REQUIRE(r1.size() == 20);
  std::set<std::string> distinct;
  std::string a, b, c;
  for (size_t i = 0; i < r1.size(); ++i) {
    distinct.insert(study::inputs_json(r1[i]));
    a += study::inputs_json(r1[i]);
    b += study::inputs_json(r2[i]);
    c += study::inputs_json(r3[i]);
  }
  CHECK(distinct.size() == 20);
  CHECK(a == b);
  CHECK(a != c);
  CHECK_THROWS_WITH(study::generate_points(parse(axes + "[sample]\nmethod = \"random\"\npoints = 65\n")),
                    Contains("sample.points"));

  // Latin hypercube: every value of a 4-value axis appears equally often over 8 rows.
  const auto l =
      study::generate_points(parse("[axes]\ntp = [1, 2, 4, 8]\npp = [1, 2, 4, 8]\nmicro_batch = [1, 2, 4, 8]\n"
                                   "[sample]\nmethod = \"lhs\"\npoints = 8\nseed = 3\n"));
  REQUIRE(l.size() == 8); // 8 rows in 64 cells: no duplicates possible per axis pair here? checked below
  std::map<int64_t, int> per_tp;
  for (const auto& p : l) ++per_tp[std::get<int64_t>(*p.find("tp"))];
  for (const auto& [v, n] : per_tp) CHECK(n == 2);
  const auto l2 =
      study::generate_points(parse("[axes]\ntp = [1, 2, 4, 8]\npp = [1, 2, 4, 8]\nmicro_batch = [1, 2, 4, 8]\n"
                                   "[sample]\nmethod = \"lhs\"\npoints = 8\nseed = 3\n"));
  for (size_t i = 0; i < l.size(); ++i) CHECK(study::inputs_json(l[i]) == study::inputs_json(l2[i]));
}

TEST_CASE("study fingerprint follows the study, not the file's spelling", "[study]") {
  const auto a = parse("[axes]\ntp = [1, 2]\n");
  const auto b = parse("[axes]\ntp = [ 1,2 ]   # same\n");
  const auto c = parse("[axes]\ntp = [1, 4]\n");
  const auto d = parse("[axes]\ntp = [1, 2]\n[filters]\nmemory_fits = false\n");
  const auto fa = study::fingerprint(a, study::generate_points(a));
  CHECK(fa == study::fingerprint(b, study::generate_points(b)));
  CHECK(fa != study::fingerprint(c, study::generate_points(c)));
  CHECK(fa != study::fingerprint(d, study::generate_points(d)));
}
