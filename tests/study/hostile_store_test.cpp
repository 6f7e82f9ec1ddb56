// A results store crafted to make `sweep show` run forever or exhaust memory — a view
// of endless rows, a generated column computing a huge value for every cell, a pipe or
// a folder instead of a file, a damaged page part-way through the rows, a cell of
// 20 MiB — is refused with a StoreError naming the store, in bounded time and memory.
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include "study/error.hpp"
#include "study/evaluate.hpp"
#include "study/store.hpp"
#include "study/study_file.hpp"
#include "tests/scratch.hpp"
#include "tests/study/store_fixture.hpp"

using namespace twinscale;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

std::string temp_db() { return study::test::temp_store("hostile"); }

void remove_db(const std::string& db) { study::test::remove_store(db); }

/// A store of two evaluated points at `db`, then `sql` run on it through SQLite itself.
void make_store(const std::string& db, const std::string& sql) {
  study::test::make_two_point_store(db);
  study::test::run_sql(db, sql);
}

/// The columns of the points table, in the order the store makes them.
const char* kColumns =
    "id, inputs, status, reason, gpus, tp, pp, vpp, dp, micro_batch, global_batch, memory_bytes, gpu_memory_bytes, "
    "ops, mode, iteration_time_s, tokens_per_s, tflops_per_gpu, mfu, compute_s, exposed_tp_s, exposed_pp_s, "
    "exposed_dp_s, bubble_s, flow_status, flow_reason, flow_iteration_time_s, flow_tokens_per_s, flow_mfu, "
    "flow_exposed_dp_s, ettr, ettr_ci95, interruptions, lost_work_s, twinscale_version";

} // namespace

TEST_CASE("hostile store: a view or a computed column in place of the points table is refused", "[study][store]") {
  const std::string db = temp_db();
  struct Case {
    std::string sql, says;
  };
  const std::string endless = std::string("ALTER TABLE points RENAME TO p0; CREATE VIEW points(") + kColumns +
                              ") AS WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c) SELECT n, "
                              "inputs, status, reason, gpus, tp, pp, vpp, dp, micro_batch, global_batch, "
                              "memory_bytes, gpu_memory_bytes, ops, mode, iteration_time_s, tokens_per_s, "
                              "tflops_per_gpu, mfu, compute_s, exposed_tp_s, exposed_pp_s, exposed_dp_s, bubble_s, "
                              "flow_status, flow_reason, flow_iteration_time_s, flow_tokens_per_s, flow_mfu, "
                              "flow_exposed_dp_s, ettr, ettr_ci95, interruptions, lost_work_s, twinscale_version "
                              "FROM c, (SELECT * FROM p0 LIMIT 1)";
  // every row's reason computed as 400 MB when read
  const std::string huge = "ALTER TABLE points RENAME TO p0; CREATE TABLE points(id INTEGER PRIMARY KEY, inputs TEXT, "
                           "status TEXT, reason TEXT GENERATED ALWAYS AS (printf('%.*c', 400000000, 'x')), gpus, tp, "
                           "pp, vpp, dp, micro_batch, global_batch, memory_bytes, gpu_memory_bytes, ops, mode, "
                           "iteration_time_s, tokens_per_s, tflops_per_gpu, mfu, compute_s, exposed_tp_s, "
                           "exposed_pp_s, exposed_dp_s, bubble_s, flow_status, flow_reason, flow_iteration_time_s, "
                           "flow_tokens_per_s, flow_mfu, flow_exposed_dp_s, ettr, ettr_ci95, interruptions, "
                           "lost_work_s, twinscale_version); DROP TABLE p0;";
  const std::vector<Case> cases = {
      {endless, "'points' is a view, not a plain table"},
      {huge, "column 'reason' of 'points' is generated"},
      {"ALTER TABLE points ADD COLUMN note TEXT DEFAULT 'pad'", "column 'note' of 'points' has a default value"},
      {"ALTER TABLE points RENAME TO p0; CREATE TABLE points AS SELECT * FROM p0; DROP TABLE p0;",
       "points.id is not the table's INTEGER PRIMARY KEY"},
      {"DROP TABLE points", "has no table 'points'"},
  };
  for (const Case& c : cases) {
    make_store(db, c.sql);
    INFO(c.sql);
    CHECK_THROWS_WITH(study::Store(db), Contains(db) && Contains(c.says));
  }
  remove_db(db);
}

TEST_CASE("hostile store: a folder or a pipe in place of the store is refused, not waited on", "[study][store]") {
  const fs::path dir = twinscale::test::empty_scratch_dir("hostile-dir");
  fs::create_directories(dir / "folder.db");
  REQUIRE(::mkfifo((dir / "pipe.db").c_str(), 0600) == 0);
  for (const char* name : {"folder.db", "pipe.db"}) {
    INFO(name);
    CHECK_THROWS_AS(study::Store((dir / name).string()), study::StoreError);
    CHECK_THROWS_WITH(study::Store((dir / name).string()), Contains(name) && Contains("not a regular file"));
  }
  fs::remove_all(dir);
}

TEST_CASE("hostile store: a damaged page part-way through the rows is an error, not a short result", "[study][store]") {
  const std::string db = temp_db();
  // 2,000 more rows of 1 KiB reasons (pages well past the schema's), in a rollback journal
  make_store(db, std::string("PRAGMA journal_mode=DELETE; INSERT INTO points(") + kColumns +
                     ") WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < 2001) SELECT i, "
                     "inputs, status, hex(randomblob(512)), gpus, tp, pp, vpp, dp, micro_batch, global_batch, "
                     "memory_bytes, gpu_memory_bytes, ops, mode, iteration_time_s, tokens_per_s, tflops_per_gpu, "
                     "mfu, compute_s, exposed_tp_s, exposed_pp_s, exposed_dp_s, bubble_s, flow_status, flow_reason, "
                     "flow_iteration_time_s, flow_tokens_per_s, flow_mfu, flow_exposed_dp_s, ettr, ettr_ci95, "
                     "interruptions, lost_work_s, twinscale_version FROM n, (SELECT * FROM points WHERE id = 0)");
  REQUIRE(study::Store(db).rows().size() == 2002);
  { // one page three quarters in (a leaf of the points table) overwritten with 0xff
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(db) * 3 / 4 / 4096 * 4096));
    const std::string junk(4096, '\xff');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  const study::Store store(db); // the schema and the meta table still read
  CHECK_THROWS_WITH(store.rows(), Contains(db) && Contains("malformed"));
  remove_db(db);
}

TEST_CASE("hostile store: a cell larger than any a sweep writes is refused", "[study][store]") {
  const std::string db = temp_db();
  make_store(db, "UPDATE points SET reason = printf('%.*c', 20000000, 'x') WHERE id = 1");
  CHECK_THROWS_WITH(study::Store(db).rows(), Contains(db) && Contains("too big"));
  remove_db(db);
}

TEST_CASE("hostile store: a damaged file with two rows of one point is refused, not read twice", "[study][store]") {
  // found by fuzz_study_store: a page whose rowids are out of order holds point 0 twice
  // (`pragma integrity_check`: "Rowid 0 out of order")
  const std::string db = temp_db();
  fs::copy_file(std::string(TWINSCALE_SOURCE_DIR) + "/tests/study/data/repeated_point_id.db", db,
                fs::copy_options::overwrite_existing);
  const study::Store store(db);
  CHECK_THROWS_WITH(store.rows(), Contains("point 0 has two rows") && Contains(db));
  CHECK_THROWS_WITH(store.done(), Contains("point 0 has two rows"));
  remove_db(db);
}
