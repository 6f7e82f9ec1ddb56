// Help texts and machine-readable output: in every sub-command's --help (found from the
// top-level help down) no default stated twice, integers typed INT, no internal milestone
// codes or source paths, no layout with PP before DP; --json on trace info and sweep show;
// sweep show --csv with every column name once.
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/cli_runner.hpp"

using twinscale::test::run_cli_split;
using twinscale::test::scratch_dir;
using twinscale::test::slurp;
using twinscale::test::write_text;

namespace {

/// The sub-commands a help text lists under "Subcommands:" (two-space indented names).
std::vector<std::string> subcommands_of(const std::string& help) {
  std::vector<std::string> names;
  const size_t at = help.find("Subcommands:");
  if (at == std::string::npos) return names;
  std::istringstream in(help.substr(at));
  std::string line;
  std::getline(in, line);
  const std::regex entry(R"(^  ([a-z][a-z-]*)\b.*)");
  for (std::smatch m; std::getline(in, line);)
    if (std::regex_match(line, m, entry)) names.push_back(m[1]);
  return names;
}

/// A help text's lines, an option's description wrapped onto the next lines joined to it.
std::vector<std::string> option_entries(const std::string& help) {
  std::vector<std::string> entries;
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) {
    if (!entries.empty() && line.rfind(std::string(20, ' '), 0) == 0)
      entries.back() += " " + line.substr(line.find_first_not_of(' '));
    else
      entries.push_back(line);
  }
  return entries;
}

/// Every command path of the CLI, found from the top-level help down (e.g. "trace info").
std::vector<std::string> every_command(const std::filesystem::path& dir) {
  std::vector<std::string> all, todo = subcommands_of(run_cli_split("--help", dir).out);
  while (!todo.empty()) {
    const std::string cmd = todo.back();
    todo.pop_back();
    all.push_back(cmd);
    for (const auto& sub : subcommands_of(run_cli_split(cmd + " --help", dir).out)) todo.push_back(cmd + " " + sub);
  }
  return all;
}

} // namespace

TEST_CASE("help texts state a default once, type integers, cite no internals and keep one layout order",
          "[cli][help]") {
  const auto dir = scratch_dir("help-texts");
  const std::regex twice(R"(\(default ([^)]*)\) \(default \1\))");
  const std::regex milestone(R"(\bM[0-9]{1,2}\b)");
  const std::regex source_path(R"([A-Za-z0-9_/]+\.(cpp|hpp|cu|h)\b)");
  // an option typed TEXT whose default is a plain integer: an integer option mistyped
  // (sizes such as 64K are TEXT on purpose and say so with an example)
  const std::regex integer_as_text(R"(TEXT(=| .*\(default )-?[0-9]+(\)|\s|$))");
  // a default CLI11 shows after the type (=VALUE) stated again in the description
  const std::regex shown_twice(R"(=([^ ]+) .*\(default \1\))");
  // the patterns find what they look for
  CHECK(std::regex_search(std::string("  --rows TEXT   rows shown (default 8)"), integer_as_text));
  CHECK(std::regex_search(std::string("  --rows INT=8   rows shown (default 8)"), shown_twice));
  CHECK(std::regex_search(std::string("keys described in study/study_file.cpp"), source_path));
  CHECK(!std::regex_search(std::string("  -b,--min-bytes TEXT  smallest size (default 8)"), shown_twice));
  // one layout order (Megatron's: tp, cp, dp, pp): no help text puts PP before DP
  const std::regex pp_before_dp(R"(\b(PP|pp) ?(×|x) ?(DP|dp)\b)");
  CHECK(std::regex_search(std::string("the TP × PP × DP grid"), pp_before_dp));
  CHECK(!std::regex_search(std::string("--layout TPxDPxPP"), pp_before_dp));
  CHECK(!std::regex_search(run_cli_split("--help", dir).out, pp_before_dp));
  const auto commands = every_command(dir);
  CHECK(commands.size() >= 25); // schedule show … preset list: every command, nested ones included
  for (const std::string& cmd : commands) {
    const auto r = run_cli_split(cmd + " --help", dir);
    INFO(cmd);
    REQUIRE(r.code == 0);
    CHECK(!std::regex_search(r.out, twice));
    CHECK(!std::regex_search(r.out, milestone));
    CHECK(!std::regex_search(r.out, source_path));
    CHECK(!std::regex_search(r.out, pp_before_dp));
    for (const std::string& entry : option_entries(r.out)) {
      INFO(entry);
      if (entry.find("e.g.") == std::string::npos) CHECK(!std::regex_search(entry, integer_as_text));
      CHECK(!std::regex_search(entry, shown_twice));
    }
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
