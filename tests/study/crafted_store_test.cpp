// A results store that no sweep wrote (values edited in SQLite) is refused with a message
// naming the store, the point and the column — not read as zeros, nor an uncaught
// std::stoll or JSON exception (exit 3) — and a store on a full disk says "disk full".
#include <filesystem>
#include <string>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include "study/error.hpp"
#include "study/evaluate.hpp"
#include "study/store.hpp"
#include "study/study_file.hpp"
#include "tests/cli_runner.hpp"
#include "tests/skip.hpp"
#include "tests/study/store_fixture.hpp"

using namespace twinscale;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

/// A store of two evaluated points at `db`.
void make_store(const std::string& db) { study::test::make_two_point_store(db); }

void edit(const std::string& db, const std::string& sql) { study::test::run_sql(db, sql); }

std::string temp_db() { return study::test::temp_store("crafted"); }

} // namespace

TEST_CASE("crafted store: a bad value names the store, the point and the column", "[study][store]") {
  const std::string db = temp_db();
  struct Case {
    std::string sql, says;
  };
  const std::vector<Case> cases = {
      {"UPDATE points SET gpus = 'abc' WHERE id = 1",
       "point 1: column 'gpus' holds text where the store keeps an integer"},
      {"UPDATE points SET mfu = 'x' WHERE id = 0", "point 0: column 'mfu' holds text where the store keeps a number"},
      {"UPDATE points SET status = 'weird' WHERE id = 1", "point 1: a stored point status is 'weird'; valid: ok"},
      {"UPDATE points SET inputs = '{\"tp\":' WHERE id = 0", "point 0: inputs: not valid JSON"},
      {"UPDATE points SET inputs = '{\"tp\":1,\"tp\":2}' WHERE id = 0", "key \"tp\" is given twice"},
      {"UPDATE points SET inputs = '[1]' WHERE id = 1", "point 1: inputs must be a JSON object"},
  };
  for (const Case& c : cases) {
    make_store(db);
    edit(db, c.sql);
    INFO(c.sql);
    CHECK_THROWS_WITH(study::Store(db).rows(), Contains(db) && Contains(c.says));
  }
  make_store(db);
  CHECK(study::Store(db).rows().size() == 2); // untouched: reads
  edit(db, "UPDATE meta SET value = 'many' WHERE key = 'points'");
  CHECK_THROWS_WITH(study::Store(db).info(), Contains(db) && Contains("meta 'points' is 'many'"));
  make_store(db);
  edit(db, "UPDATE meta SET value = '[\"tp\", 3' WHERE key = 'axes'");
  CHECK_THROWS_WITH(study::Store(db).info(), Contains(db) && Contains("meta 'axes'") && Contains("not valid JSON"));
  // end to end: sweep show exits 1 (it was 3) naming the store and the point
  make_store(db);
  edit(db, "UPDATE points SET status = 'weird' WHERE id = 1");
  const auto r = test::run_cli("sweep show " + db, test::Capture::StdoutAndStderr);
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Contains(db + ": point 1: a stored point status is 'weird'"));
  for (const char* ext : {"", "-wal", "-shm"}) fs::remove(db + ext);
}

TEST_CASE("crafted store: a store that cannot grow (a full disk) says 'disk full'", "[study][store]") {
  if (std::system("prlimit --version >/dev/null 2>&1") != 0) TWINSCALE_SKIP("prlimit (util-linux) is not installed");
  const fs::path dir = twinscale::test::empty_scratch_dir("store-full");
  const std::string study = (dir / "s.toml").string();
  test::write_text(study, study::test::kTwoPointStudy);
  // files past 8 KiB fail (EFBIG, as on a full disk): the store's schema fits, its log does not
  const test::CliOutput r =
      test::run_cli_split("sweep " + study + " --db " + (dir / "s.db").string(), dir, "prlimit --fsize=8192 ");
  CHECK(r.code == 1);
  CHECK(r.says("s.db"));
  CHECK(r.says("disk full"));
  fs::remove_all(dir);
}
