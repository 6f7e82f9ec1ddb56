// The axes a sweep can vary beyond the original grid: the ZB-H1 pipeline, ZeRO-3,
// context parallelism (cp), expert parallelism (ep) and the servers' NIC count. Every
// value of every such axis gives at least one feasible point whose stored result is a
// simulated iteration; a combination the job model refuses is stored as infeasible with
// check_job's reason (ZB-H1 with ZeRO-3; cp, ZB-H1 and ep > 1 where the job cannot).
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "study/store.hpp"
#include "tests/backend/mpi_helpers.hpp"
#include "tests/cli_runner.hpp"

using namespace twinscale;
using Catch::Matchers::Contains;
namespace bt = twinscale::backend::test;

TEST_CASE("sweep: zb-h1 and ZeRO-3 and cp and ep and the NIC count are axes whose points run and are stored",
          "[study][cli]") {
  const std::string dir = bt::fresh_dir("sweep-axes");
  const std::string study = dir + "/axes.toml";
  test::write_text(study, R"(name = "new-axes"
[base]
job = "tiny-1f1b"
gpus = 16
global_batch = 16
[axes]
job = ["tiny-1f1b", "tiny-moe"]
pipeline = ["1f1b", "zb-h1"]
zero_stage = [1, 3]
cp = [1, 2]
ep = [1, 2]
nics = [8, 4]
)");
  const auto run =
      test::run_cli("sweep " + study + " --db " + dir + "/a.db --progress never", test::Capture::StdoutAndStderr);
  INFO(run.out);
  REQUIRE(run.rc == 0);
  const auto rows = study::Store(dir + "/a.db").rows();
  REQUIRE(rows.size() == 64);
  std::map<std::string, std::set<std::string>> ok_values; // axis → values seen in a feasible point
  bool zb_zero3_refused = false;
  for (const auto& row : rows) {
    const auto inputs = nlohmann::json::parse(row.inputs);
    if (row.result.status != study::PointStatus::Ok) {
      CHECK(row.result.status == study::PointStatus::Infeasible);
      if (inputs.at("pipeline") == "zb-h1" && inputs.at("zero_stage") == 3)
        zb_zero3_refused |= row.result.reason.find("zero_stage = 3") != std::string::npos;
      continue;
    }
    CHECK(row.result.mode == "analytic");
    CHECK(row.result.iteration_time_s > 0);
    CHECK(row.result.mfu > 0);
    // dp = gpus / (tp·pp·cp), tp = pp = 2 in both jobs
    CHECK(row.result.dp == 16 / (4 * inputs.at("cp").get<int64_t>()));
    for (const auto& [axis, value] : inputs.items()) ok_values[axis].insert(value.dump());
  }
  CHECK(zb_zero3_refused);
  CHECK(ok_values["pipeline"] == std::set<std::string>{"\"1f1b\"", "\"zb-h1\""});
  CHECK(ok_values["zero_stage"] == std::set<std::string>{"1", "3"});
  CHECK(ok_values["cp"] == std::set<std::string>{"1", "2"});
  CHECK(ok_values["ep"] == std::set<std::string>{"1", "2"});
  CHECK(ok_values["nics"] == std::set<std::string>{"4", "8"});
  CHECK(ok_values["job"] == std::set<std::string>{"\"tiny-1f1b\"", "\"tiny-moe\""});
  std::filesystem::remove_all(dir);
}
