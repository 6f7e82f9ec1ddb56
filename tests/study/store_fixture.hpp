#pragma once
// A small results store for the tests that edit one in SQLite (crafted values, hostile
// schemas): two evaluated points of tiny-megascale at 16 GPUs, a store path per test
// process, and SQL run on the store through SQLite itself.
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include "study/evaluate.hpp"
#include "study/store.hpp"
#include "study/study_file.hpp"
#include "tests/scratch.hpp"

namespace twinscale::study::test {

inline const char* kTwoPointStudy = R"(
name = "two-points"
[base]
job = "tiny-megascale"
gpus = 16
[axes]
tp = [1, 2]
pp = [2]
vpp = [1]
micro_batch = [1]
)";

/// Removes the store and SQLite's side files.
inline void remove_store(const std::string& db) {
  for (const char* ext : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(db + ext);
}

/// A store path in the temporary folder, unique to this process and `tag`, with no store
/// there (one an earlier process of the same id left is removed: ids repeat).
inline std::string temp_store(const std::string& tag) {
  const std::string db = twinscale::test::scratch_path(tag).string() + ".db";
  remove_store(db);
  return db;
}

/// A store at `db` of the study `study_text`, every point evaluated.
inline void fill_store(const std::string& db, const char* study_text) {
  const auto spec = parse_study(study_text, "s.toml");
  const auto points = generate_points(spec);
  Evaluator ev(spec);
  Store store(db, spec, points);
  for (const auto& p : points) store.put(p, ev.evaluate(p));
}

/// A fresh store of the two points of kTwoPointStudy, evaluated, at `db`.
inline void make_two_point_store(const std::string& db) {
  remove_store(db);
  fill_store(db, kTwoPointStudy);
}

/// Runs `sql` on the store at `db` through SQLite itself (the edits no sweep makes).
inline void run_sql(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &h) == SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err);
  INFO((err ? err : ""));
  sqlite3_free(err);
  sqlite3_close(h);
  REQUIRE(rc == SQLITE_OK);
}

} // namespace twinscale::study::test
