// Help texts and machine-readable output: no default stated twice, integers typed INT,
// no internal milestone codes or source paths; --json on trace info and sweep show;
// sweep show --csv with every column name once.
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "tests/cli_runner.hpp"

using twinscale::test::run_cli_split;
using twinscale::test::scratch_dir;
using twinscale::test::slurp;
using twinscale::test::write_text;

TEST_CASE("help texts state a default once, type integers and cite no internals", "[cli][help]") {
  const auto dir = scratch_dir("help-texts");
  const std::regex twice(R"(\(default ([^)]*)\) \(default \1\))");
  const std::regex milestone(R"(\bM[0-9]{1,2}\b)");
  for (const char* cmd : {"schedule show", "schedule memory", "topology show", "topology ecmp", "simulate",
                          "collective", "campaign", "tune-checkpoint", "run", "calibrate", "probe", "sweep",
                          "sweep show", "diagnose", "report", "simulate-jobs", "trace info", "preset show"}) {
    const auto r = run_cli_split(std::string(cmd) + " --help", dir);
    INFO(cmd);
    REQUIRE(r.code == 0);
    CHECK(!std::regex_search(r.out, twice));
    CHECK(!std::regex_search(r.out, milestone));
    CHECK(r.out.find(".cpp") == std::string::npos);
    CHECK(r.out.find(".hpp") == std::string::npos);
  }
  CHECK(run_cli_split("schedule show --help", dir).out.find("--gpus INT") != std::string::npos);
  CHECK(run_cli_split("simulate --help", dir).out.find("--seed UINT") != std::string::npos);
  const auto diag = run_cli_split("diagnose --help", dir).out;
  CHECK(diag.find("--rows INT") != std::string::npos);
  CHECK(diag.find("(default 8) (default 8)") == std::string::npos);
}

TEST_CASE("sweep show --json and a CSV with unique column names", "[cli][json]") {
  const auto dir = scratch_dir("sweep-show-json");
  write_text(dir / "s.toml", "name = \"j\"\n[base]\njob = \"tiny-megascale\"\ngpus = 16\n[axes]\ntp = [1, 2]\n");
  const std::string db = (dir / "s.db").string();
  REQUIRE(run_cli_split("sweep " + (dir / "s.toml").string() + " --quiet --db " + db, dir).code == 0);
  const auto j = run_cli_split("sweep show " + db + " --json", dir);
  REQUIRE(j.code == 0);
  CHECK(j.out.find("\"rows\"") != std::string::npos);
  CHECK(j.out.find("\"best_ids\"") != std::string::npos);
  CHECK(j.out.find("\"pareto_ids\"") != std::string::npos);
  CHECK(j.out.find("\"inputs\"") != std::string::npos);
  const std::string csv = (dir / "s.csv").string();
  REQUIRE(run_cli_split("sweep show " + db + " --csv " + csv, dir).code == 0);
  const std::string text = slurp(csv);
  std::istringstream header(text.substr(0, text.find('\n')));
  std::set<std::string> names;
  for (std::string name; std::getline(header, name, ',');) CHECK(names.insert(name).second);
  CHECK(names.count("axis_tp") == 1);
  CHECK(names.count("tp") == 1);
}

TEST_CASE("trace info --json", "[cli][json]") {
  const auto dir = scratch_dir("trace-info-json");
  const std::string trace = (dir / "t.tstrace").string();
  REQUIRE(run_cli_split("simulate --preset tiny-1f1b --mode analytic --trace " + trace, dir).code == 0);
  const auto r = run_cli_split("trace info " + trace + " --json", dir);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("\"events\": ") != std::string::npos);
  CHECK(r.out.find("\"layout\"") != std::string::npos);
  CHECK(r.out.find("\"ranks\": 8") != std::string::npos);
}
