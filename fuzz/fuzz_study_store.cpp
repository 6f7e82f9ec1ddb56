// libFuzzer harness: the SQLite results store of a study as `sweep show` reads it
// (study/store.cpp, compiled into the harness with the points and statuses it stores:
// the rest of study/ needs the simulator). The input is written as a database file in a
// private folder and opened through the store's reader, which reads its meta, its rows
// and the done sets. A crafted file (a view, a generated column, a corrupted page, a
// huge cell) must be refused with a StoreError, in bounded time and memory.
// An input whose first line is "--sql" is instead an SQL script, run on a copy of that
// seed store before it is read: the schema-level crafting (views, generated columns,
// defaults, triggers, tables renamed or rebuilt, writable_schema edits) that byte
// mutations of a file rarely reach. The script runs under its own bounds (10^7 SQLite
// steps, 1 MiB values, no attached databases and no VACUUM INTO: it writes no other file).
// With TWINSCALE_FUZZ_WRITE_SEED=FILE the harness writes a small store of two points
// (one with a flow re-simulation, page size 512) there through the store's writer and
// exits.
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sqlite3.h>

#include "fuzz/fuzz_common.hpp"
#include "study/store.hpp"

namespace {

namespace st = twinscale::study;

void write_seed(const std::string& path) {
  std::filesystem::remove(path);
  sqlite3* db = nullptr; // small pages keep the seed a few KiB
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK ||
      sqlite3_exec(db, "PRAGMA page_size=512; VACUUM;", nullptr, nullptr, nullptr) != SQLITE_OK)
    std::abort();
  sqlite3_close(db);
  st::StudySpec spec;
  spec.file = "seed.toml";
  spec.name = "seed";
  spec.job = "tiny-megascale";
  spec.axes.push_back({"tp", {st::Value{int64_t{1}}, st::Value{int64_t{2}}}});
  const std::vector<st::Point> points = st::generate_points(spec);
  {
    st::Store store(path, spec, points);
    for (const st::Point& p : points) {
      st::PointResult r;
      r.id = p.id;
      r.status = p.id == 0 ? st::PointStatus::Ok : st::PointStatus::Infeasible;
      r.reason = p.id == 0 ? "" : "does not fit";
      r.gpus = 16;
      r.tp = p.id + 1;
      r.mode = "analytic";
      r.iteration_time_s = 1.5;
      r.mfu = 0.4;
      store.put(p, r);
    }
    st::PointResult flow;
    flow.id = 0;
    flow.mode = "flow";
    flow.iteration_time_s = 1.75;
    store.put_flow(flow);
  }
  // a rollback-journal file (the writer leaves write-ahead logging on): one file, no -wal
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK ||
      sqlite3_exec(db, "PRAGMA journal_mode=DELETE;", nullptr, nullptr, nullptr) != SQLITE_OK)
    std::abort();
  sqlite3_close(db);
}

/// The seed store's bytes, which an SQL input edits.
const std::string& seed_bytes() {
  static const std::string bytes = [] {
    const std::string path = (twinscale::fuzz::scratch_dir() / "seed.db").string();
    write_seed(path);
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  return bytes;
}

int stop_after(void* steps) { return ++*static_cast<int64_t*>(steps) > 10'000 ? 1 : 0; }

int no_attach(void*, int action, const char*, const char*, const char*, const char*) {
  return action == SQLITE_ATTACH || action == SQLITE_DETACH ? SQLITE_DENY : SQLITE_OK;
}

/// Runs the script `sql` on `path` (a copy of the seed store); false when it cannot run.
bool craft(const std::string& path, const std::string& sql) {
  std::string lower = sql;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("vacuum") != std::string::npos || sql.find('\0') != std::string::npos) return false;
  twinscale::fuzz::write_input(path, reinterpret_cast<const uint8_t*>(seed_bytes().data()), seed_bytes().size());
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) std::abort();
  int64_t steps = 0;
  sqlite3_progress_handler(db, 1000, stop_after, &steps);
  sqlite3_set_authorizer(db, no_attach, nullptr);
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
  const bool ok = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
  sqlite3_close(db);
  return ok;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* seed = std::getenv("TWINSCALE_FUZZ_WRITE_SEED")) {
    write_seed(seed);
    std::exit(0);
  }
  (void)seed_bytes();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path dir = twinscale::fuzz::scratch_dir() / "store";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec); // with any -wal, -shm or -journal of the last input
  const std::string_view text = twinscale::fuzz::as_text(data, size);
  if (text.rfind("--sql\n", 0) == 0) {
    // a script that fails part-way still leaves what it did: read that too
    (void)craft((dir / "sweep.db").string(), std::string(text));
  } else {
    twinscale::fuzz::write_input(dir / "sweep.db", data, size);
  }
  twinscale::fuzz::expect_clean_rejection([&] {
    const st::Store store((dir / "sweep.db").string());
    (void)store.info();
    const std::vector<st::StoredPoint> rows = store.rows();
    if (store.done().size() != rows.size()) {
      std::fprintf(stderr, "the store's done set and its rows disagree\n");
      std::abort();
    }
    (void)store.flow_done();
  });
  return 0;
}
