// The store keeps the whole layout (tp, cp, ep, pp, vpp, dp) and the MoE all-to-alls'
// exposed time in a column of its own (exposed_ep_s), apart from TP's, with the figures
// `twinscale simulate --json` prints; a store of the first schema (no cp, ep or
// exposed_ep_s) still opens for `sweep show`, is not extended by a study, and a store of a
// newer schema is refused, each with a message naming the version.
#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "study/error.hpp"
#include "study/evaluate.hpp"
#include "study/report.hpp"
#include "study/store.hpp"
#include "study/study_file.hpp"
#include "tests/cli_runner.hpp"
#include "tests/study/store_fixture.hpp"

using namespace twinscale;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// tiny-moe at 8 GPUs: tp 2, pp 2, so dp 2; ep 2 spreads the experts over both dp ranks.
const char* kMoeStudy = R"(
name = "schema"
[base]
job = "tiny-moe"
gpus = 8
[axes]
ep = [1, 2]
cp = [1]
[evaluate]
what = "simulate"
mode = "analytic"
)";

std::string temp_db(const std::string& tag) {
  const std::string db = study::test::temp_store("schema-" + tag);
  study::test::remove_store(db);
  return db;
}

void edit(const std::string& db, const std::string& sql) { study::test::run_sql(db, sql); }

/// A store of kMoeStudy, every point evaluated.
void fill(const std::string& db) { study::test::fill_store(db, kMoeStudy); }

std::vector<std::string> csv_header(const std::string& csv) {
  std::vector<std::string> out;
  std::stringstream header(csv.substr(0, csv.find('\n')));
  for (std::string name; std::getline(header, name, ',');) out.push_back(name);
  return out;
}

} // namespace

TEST_CASE("store schema: cp, ep and the exposed EP time are stored as simulate reports them", "[study][store]") {
  const std::string db = temp_db("moe");
  fill(db);
  const study::Store store(db);
  CHECK(store.info().schema_version == study::kStoreSchemaVersion);
  const auto rows = store.rows();
  REQUIRE(rows.size() == 2);
  const auto sim = nlohmann::json::parse(
      test::run_cli("simulate --preset tiny-moe --gpus 8 --mode analytic --json", test::Capture::StdoutOnly).out);
  const auto& b = sim.at("breakdown");
  REQUIRE(b.at("exposed_ep_s").get<double>() > 0); // the MoE all-to-alls are exposed in this job
  const study::PointResult& ep2 = rows[1].result;
  REQUIRE(ep2.status == study::PointStatus::Ok);
  CHECK(ep2.tp == 2);
  CHECK(ep2.cp == 1);
  CHECK(ep2.ep == 2);
  CHECK(ep2.pp == 2);
  CHECK(ep2.dp == 2);
  CHECK(ep2.exposed_tp_s == b.at("exposed_tp_s").get<double>());
  CHECK(ep2.exposed_ep_s == b.at("exposed_ep_s").get<double>());
  CHECK(ep2.iteration_time_s == sim.at("iteration_time_s").get<double>());
  CHECK(rows[0].result.ep == 1);
  // the work-queue serialisation keeps the new fields
  CHECK(study::point_result_from_json(study::to_json(ep2)).exposed_ep_s == ep2.exposed_ep_s);
  CHECK(study::point_result_from_json(study::to_json(ep2)).ep == 2);

  const std::string csv = study::rows_csv(store.info(), rows);
  const auto names = csv_header(csv);
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size()); // every column once
  for (const char* c : {"axis_ep", "axis_cp", "cp", "ep", "exposed_tp_s", "exposed_ep_s"})
    CHECK(std::count(names.begin(), names.end(), c) == 1);
  CHECK_THAT(study::summary_table(store.info(), rows, 2), Contains("tp 2 cp 1 dp 2 pp 2 vpp 1 ep 2 mb 1"));
}

TEST_CASE("store schema: a store of the first schema is read, not extended, and a newer one is refused",
          "[study][store]") {
  const std::string db = temp_db("v1");
  fill(db);
  // the first schema: no cp, ep or exposed_ep_s, no schema_version in meta
  edit(db, "ALTER TABLE points DROP COLUMN cp; ALTER TABLE points DROP COLUMN ep; "
           "ALTER TABLE points DROP COLUMN exposed_ep_s; DELETE FROM meta WHERE key = 'schema_version'");
  {
    const study::Store store(db);
    const auto info = store.info();
    CHECK(info.schema_version == 1);
    const auto rows = store.rows();
    REQUIRE(rows.size() == 2);
    CHECK(rows[1].result.tp == 2);
    CHECK(rows[1].result.cp == 0); // not recorded
    CHECK(rows[1].result.ep == 0);
    CHECK(rows[1].result.mfu > 0);
    const std::string csv = study::rows_csv(info, rows);
    CHECK_THAT(csv, Contains("\n1,1,2,ok,,8,2,,,2,1,2,")); // id, axes cp and ep, …, gpus, tp, blank cp and ep, pp
    CHECK_THAT(study::summary_table(info, rows, 2), Contains("schema version 1") && Contains("tp 2 dp 2 pp 2"));
  }
  const auto spec = study::parse_study(kMoeStudy, "schema.toml");
  CHECK_THROWS_WITH(study::Store(db, spec, study::generate_points(spec)),
                    Contains(db) && Contains("schema version 1") && Contains("give a new --db"));
  // and `sweep show` prints it
  const auto shown = test::run_cli("sweep show " + db, test::Capture::StdoutAndStderr);
  CHECK(shown.rc == 0);
  CHECK_THAT(shown.out, Contains("schema version 1"));

  edit(db, "INSERT INTO meta(key, value) VALUES('schema_version', '3')");
  CHECK_THROWS_WITH(study::Store(db), Contains(db) && Contains("schema version 3") && Contains("newer twinscale"));
  const auto refused = test::run_cli("sweep show " + db, test::Capture::StdoutAndStderr);
  CHECK(refused.rc != 0);
  CHECK_THAT(refused.out, Contains("schema version 3"));
  for (const char* ext : {"", "-wal", "-shm"}) fs::remove(db + ext);
}
