// `twinscale sweep show` of a study over ep: the layout it prints and its CSV carry cp and
// ep, each column name once, and the MoE all-to-alls' exposed time in exposed_ep_s (equal
// to `simulate --json`'s), not folded into exposed_tp_s.
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli_runner.hpp"

using namespace twinscale;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

} // namespace

TEST_CASE("sweep show: cp, ep and exposed_ep_s columns, each column once", "[sweep]") {
  const fs::path dir = test::scratch_dir("sweep-layout");
  test::write_text(dir / "s.toml", R"(name = "layout"
[base]
job = "tiny-moe"
gpus = 8
[axes]
ep = [2]
[evaluate]
what = "simulate"
mode = "analytic"
)");
  const std::string db = (dir / "s.db").string();
  auto run = test::run_cli_split("sweep " + (dir / "s.toml").string() + " --db " + db, dir);
  INFO(run.out << run.err);
  REQUIRE(run.code == 0);
  auto show = test::run_cli_split("sweep show " + db + " --csv " + (dir / "all.csv").string(), dir);
  REQUIRE(show.code == 0);
  CHECK_THAT(show.out, Contains("tp 2 cp 1 dp 2 pp 2 vpp 1 ep 2 mb 1"));
  std::istringstream csv(test::slurp(dir / "all.csv"));
  std::string header, row;
  REQUIRE(std::getline(csv, header));
  REQUIRE(std::getline(csv, row));
  const auto names = split(header), cells = split(row);
  REQUIRE(names.size() == cells.size());
  std::map<std::string, std::string> at;
  for (size_t i = 0; i < names.size(); ++i) CHECK(at.emplace(names[i], cells[i]).second); // unique names
  CHECK(at.at("axis_ep") == "2");
  CHECK(at.at("tp") == "2");
  CHECK(at.at("cp") == "1");
  CHECK(at.at("ep") == "2");
  CHECK(at.at("dp") == "2");

  auto sim = test::run_cli_split("simulate --preset tiny-moe --gpus 8 --mode analytic --json", dir);
  REQUIRE(sim.code == 0);
  const auto b = nlohmann::json::parse(sim.out).at("breakdown");
  REQUIRE(b.at("exposed_ep_s").get<double>() > 0);
  CHECK(std::stod(at.at("exposed_ep_s")) == Approx(b.at("exposed_ep_s").get<double>()).epsilon(1e-8));
  CHECK(std::stod(at.at("exposed_tp_s")) == Approx(b.at("exposed_tp_s").get<double>()).epsilon(1e-8));
  fs::remove_all(dir);
}
