#include "study/store.hpp"

#include <cerrno>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "config/error.hpp"
#include "schedules/error.hpp"
#include "schedules/json_document.hpp"

namespace twinscale::study {

namespace {

const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS points(
  id INTEGER PRIMARY KEY, inputs TEXT NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL,
  gpus INTEGER, tp INTEGER, cp INTEGER, ep INTEGER, pp INTEGER, vpp INTEGER, dp INTEGER, micro_batch INTEGER,
  global_batch INTEGER, memory_bytes REAL, gpu_memory_bytes REAL, ops INTEGER, mode TEXT,
  iteration_time_s REAL, tokens_per_s REAL, tflops_per_gpu REAL, mfu REAL,
  compute_s REAL, exposed_tp_s REAL, exposed_ep_s REAL, exposed_pp_s REAL, exposed_dp_s REAL, bubble_s REAL,
  flow_status TEXT, flow_reason TEXT, flow_iteration_time_s REAL, flow_tokens_per_s REAL, flow_mfu REAL,
  flow_exposed_dp_s REAL, ettr REAL, ettr_ci95 REAL, interruptions REAL, lost_work_s REAL,
  twinscale_version TEXT NOT NULL);
)sql";

/// SQLite's message for the last failure on `db`, saying "disk full" when it is one: the
/// device holding the store is full (SQLITE_FULL, or a write that failed with ENOSPC,
/// EDQUOT or EFBIG, which SQLite may report as a disk I/O error).
std::string failure(sqlite3* db) {
  const std::string msg = sqlite3_errmsg(db);
  const int sys = sqlite3_system_errno(db);
  if ((sqlite3_errcode(db) & 0xff) == SQLITE_FULL || sys == ENOSPC || sys == EDQUOT || sys == EFBIG)
    return "disk full (" + msg + ")";
  if ((sqlite3_errcode(db) & 0xff) == SQLITE_INTERRUPT)
    return "reading it takes more steps than a store of its size can need (a crafted or damaged file?)";
  return msg;
}

/// Bounds what a crafted file can make SQLite do on this connection: no views, triggers
/// or attached databases, no functions in the schema, cells of at most 16 MiB (a store's
/// longest is a failure reason), short statements, shallow expressions, and cell sizes
/// checked as pages are read.
void guard_connection(sqlite3* db) {
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 24);
  sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, 1 << 20);
  sqlite3_limit(db, SQLITE_LIMIT_COLUMN, 100);
  sqlite3_limit(db, SQLITE_LIMIT_EXPR_DEPTH, 100);
  sqlite3_limit(db, SQLITE_LIMIT_COMPOUND_SELECT, 8);
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_exec(db, "PRAGMA cell_size_check=ON;", nullptr, nullptr, nullptr);
}

/// A prepared statement, finalised on scope exit.
class Stmt {
public:
  Stmt(sqlite3* db, const std::string& sql, const std::string& path) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
      throw StoreError(path + ": " + failure(db) + " (in: " + sql + ")");
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.c_str(), -1, SQLITE_TRANSIENT);
    return *this;
  }
  int step() { return sqlite3_step(s_); }
  /// The next row: true while there is one, false at the end; a failure part-way (a
  /// damaged page, the read budget spent) is a StoreError, never a short result.
  bool next() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw StoreError(path_ + ": " + failure(db_));
  }
  int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
  double dbl(int c) const { return sqlite3_column_double(s_, c); }
  bool null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  int type(int c) const { return sqlite3_column_type(s_, c); }
  std::string name(int c) const { return sqlite3_column_name(s_, c); }
  std::string text(int c) const {
    const auto* t = sqlite3_column_text(s_, c);
    return t ? reinterpret_cast<const char*>(t) : "";
  }

private:
  sqlite3* db_;
  std::string path_;
  sqlite3_stmt* s_ = nullptr;
};

/// The columns of one row of a store's points table, each checked against the type the
/// store writes there (a crafted store gets a message naming the store, the point and
/// the column, not a zero read from text).
class Row {
public:
  Row(const Stmt& q, const std::string& path) : q_(q), path_(path) {}
  void set_id(int64_t id) { id_ = id; }
  int type(int c) const { return q_.type(c); }
  int64_t integer(int c) const {
    if (q_.type(c) != SQLITE_INTEGER) bad(c, "an integer");
    return q_.i64(c);
  }
  /// A REAL column: a number, or NULL where a NaN was stored (read as 0, as before).
  double real(int c) const {
    if (q_.type(c) != SQLITE_FLOAT && q_.type(c) != SQLITE_INTEGER && q_.type(c) != SQLITE_NULL) bad(c, "a number");
    return q_.dbl(c);
  }
  std::string text(int c) const {
    if (q_.type(c) != SQLITE_TEXT) bad(c, "text");
    return q_.text(c);
  }
  PointStatus status(int c) const {
    try {
      return point_status_from(text(c));
    } catch (const StoreError& e) {
      throw StoreError(where() + e.what());
    }
  }
  [[noreturn]] void fail(const std::string& why) const { throw StoreError(where() + why); }

private:
  std::string where() const { return path_ + ": point " + std::to_string(id_) + ": "; }
  [[noreturn]] void bad(int c, const char* what) const {
    static const char* const kTypes[] = {"?", "an integer", "a number", "text", "a blob", "NULL"};
    const int t = q_.type(c);
    fail("column '" + q_.name(c) + "' holds " + (t >= 1 && t <= 5 ? kTypes[t] : "?") + " where the store keeps " +
         what + " (is this a store written by `twinscale sweep`?)");
  }
  const Stmt& q_;
  const std::string& path_;
  int64_t id_ = -1;
};

/// A meta value that must be a whole number ≥ 0.
int64_t meta_count(const std::string& path, const std::string& key, const std::string& v) {
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < 0)
    throw StoreError(path + ": meta '" + key + "' is '" + v + "'; the store keeps a whole number ≥ 0 there");
  return n;
}

/// The layout of the points table a store holds: version 1 (no meta 'schema_version')
/// lacks cp, ep and exposed_ep_s, and its exposed_tp_s holds TP and the MoE all-to-alls
/// together; version 2 adds the three columns and keeps exposed_tp_s for TP alone. 0: an
/// empty file (no fingerprint yet).
int64_t stored_schema_version(sqlite3* db, const std::string& path) {
  Stmt q(db, "SELECT key, value FROM meta WHERE key IN ('fingerprint', 'schema_version')", path);
  int64_t version = 0;
  bool fingerprint = false;
  while (q.next()) {
    if (q.text(0) == "fingerprint")
      fingerprint = true;
    else
      version = meta_count(path, "schema_version", q.text(1));
  }
  return version > 0 ? version : fingerprint ? 1 : 0;
}

/// The message for a store of a schema version this twinscale does not add rows to
/// (older) or cannot read (newer).
std::string version_refusal(const std::string& path, int64_t version) {
  const std::string v = std::to_string(version), ours = std::to_string(kStoreSchemaVersion);
  if (version > kStoreSchemaVersion)
    return path + ": results store of schema version " + v +
           ", written by a newer twinscale; this one reads versions 1 to " + ours;
  return path + ": results store of schema version " + v + " (no cp, ep or exposed_ep_s columns; its exposed_tp_s " +
         "includes the MoE all-to-alls); this twinscale writes version " + ours +
         " and does not add rows to an older store: `twinscale sweep show` still reads it; give a new --db to run "
         "the study again";
}

/// The meta value 'axes': a JSON array of axis names.
std::vector<std::string> meta_axes(const std::string& path, const std::string& v) {
  nlohmann::json j;
  try {
    j = schedules::parse_json_document(v, path + ": meta 'axes'");
  } catch (const schedules::JsonDocumentError& e) {
    throw StoreError(e.what());
  }
  std::vector<std::string> out;
  if (!j.is_array()) throw StoreError(path + ": meta 'axes' must be a JSON array of axis names, not " + v);
  for (const auto& a : j) {
    if (!a.is_string()) throw StoreError(path + ": meta 'axes' must be a JSON array of axis names, not " + v);
    out.push_back(a.get<std::string>());
  }
  return out;
}

/// The store's tables as `sweep` makes them: ordinary tables (not views or virtual
/// tables), every column stored (no generated column and no default, which a crafted file
/// could use to compute a large value for every cell read), and `id` the integer primary
/// key of `points` (one row per point).
void check_schema(sqlite3* db, const std::string& path) {
  for (const std::string table : {"meta", "points"}) {
    Stmt t(db, "SELECT type, sql FROM sqlite_schema WHERE name = '" + table + "'", path);
    if (!t.next()) throw StoreError(path + ": has no table '" + table + "'");
    const std::string sql = t.type(1) == SQLITE_TEXT ? t.text(1) : "";
    if (t.text(0) != "table" || sql.rfind("CREATE TABLE", 0) != 0)
      throw StoreError(path + ": '" + table + "' is a " + t.text(0) +
                       (sql.rfind("CREATE VIRTUAL", 0) == 0 ? " (virtual)" : "") + ", not a plain table");
    Stmt cols(db, "PRAGMA table_xinfo(" + table + ")", path);
    bool id_key = false;
    while (cols.next()) { // cid, name, type, notnull, dflt_value, pk, hidden
      const std::string name = cols.text(1);
      if (cols.i64(6) != 0)
        throw StoreError(path + ": column '" + name + "' of '" + table + "' is generated; the store keeps values");
      if (!cols.null(4))
        throw StoreError(path + ": column '" + name + "' of '" + table + "' has a default value (" + cols.text(4) +
                         "); the store's columns have none");
      if (table == "points" && name == "id")
        id_key = cols.i64(5) == 1 && sqlite3_stricmp(cols.text(2).c_str(), "INTEGER") == 0;
    }
    if (table == "points" && !id_key) throw StoreError(path + ": points.id is not the table's INTEGER PRIMARY KEY");
  }
}

/// The most SQLite virtual-machine steps, in thousands, that reading a store of this size
/// (with its write-ahead log) may take, for all the reads of one connection: a thousand
/// per byte, far above what the reads need, and a bound on a file crafted to loop.
int64_t read_budget(const std::string& path) {
  std::error_code ec;
  int64_t bytes = 0;
  for (const char* ext : {"", "-wal"}) {
    const auto n = std::filesystem::file_size(path + ext, ec);
    if (!ec) bytes += static_cast<int64_t>(n);
  }
  return bytes + 10'000;
}

int on_progress(void* budget) {
  auto* b = static_cast<int64_t*>(budget); // {calls so far, most calls}
  return ++b[0] > b[1] ? 1 : 0;
}

} // namespace

std::string twinscale_version() { return TWINSCALE_VERSION; }

void Store::exec(const std::string& sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    sqlite3_free(err);
    throw StoreError(path_ + ": " + failure(db_));
  }
}

Store::Store(const std::string& path, const StudySpec& spec, const std::vector<Point>& points) : path_(path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK)
    throw StoreError(path + ": cannot open results store: " + (db_ ? sqlite3_errmsg(db_) : "out of memory"));
  guard_connection(db_);
  sqlite3_busy_timeout(db_, 120'000); // shards of one study wait for each other's commits
  // WAL + synchronous=NORMAL: a committed point survives the process being killed.
  // Shards started together race to switch a new file to WAL; that switch needs an
  // exclusive lock for which SQLite returns SQLITE_BUSY at once, without the busy
  // handler, so it is retried here (bounded like the busy timeout).
  for (int attempt = 0;; ++attempt) {
    const int rc = sqlite3_exec(db_, "PRAGMA journal_mode=WAL;", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) break;
    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || attempt >= 12'000) {
      const std::string msg = failure(db_);
      sqlite3_close(db_);
      db_ = nullptr;
      throw StoreError(path + ": cannot switch the results store to write-ahead logging: " + msg);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  exec("PRAGMA synchronous=NORMAL;");
  exec("BEGIN IMMEDIATE;");
  try {
    exec(kSchema);
    check_schema(db_, path_);
    const std::string fp = fingerprint(spec, points);
    const int64_t version = stored_schema_version(db_, path_);
    Stmt q(db_, "SELECT value FROM meta WHERE key = 'fingerprint'", path_);
    if (q.next()) {
      if (version != kStoreSchemaVersion) throw StoreError(version_refusal(path, version));
      if (q.text(0) != fp) {
        Stmt n(db_, "SELECT value FROM meta WHERE key IN ('name') ", path_);
        const std::string other = n.next() ? n.text(0) : "?";
        throw config::ConfigError(path + ": this results store belongs to study '" + other + "' (fingerprint " +
                                  q.text(0) + "), not to " + spec.file + " (fingerprint " + fp +
                                  "): the study changed since the store was made; give a new --db or delete it");
      }
    } else {
      nlohmann::json axes = nlohmann::json::array();
      for (const auto& a : spec.axes) axes.push_back(a.name);
      const std::vector<std::pair<std::string, std::string>> meta = {
          {"name", spec.name},
          {"fingerprint", fp},
          {"study_file", spec.file},
          {"points", std::to_string(points.size())},
          {"axes", axes.dump()},
          {"flow_best", std::to_string(spec.flow_best)},
          {"twinscale_version", twinscale_version()},
          {"schema_version", std::to_string(kStoreSchemaVersion)}};
      for (const auto& [k, v] : meta) {
        Stmt ins(db_, "INSERT INTO meta(key, value) VALUES(?, ?)", path_);
        ins.bind(1, k).bind(2, v);
        if (ins.step() != SQLITE_DONE) throw StoreError(path_ + ": " + failure(db_));
      }
    }
    exec("COMMIT;");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

Store::Store(const std::string& path) : path_(path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw StoreError(path + ": no such results store");
  if (!std::filesystem::is_regular_file(path, ec))
    throw StoreError(path + ": not a regular file (a folder, a device or a pipe); a results store is the file " +
                     "`twinscale sweep --db` writes");
  // Read-write when the file allows it (read-only otherwise), only so that SQLite can
  // remove its -wal/-shm files on close; nothing is written through this connection.
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(path + ": cannot open results store: " + msg);
  }
  guard_connection(db_);
  budget_[1] = read_budget(path);
  sqlite3_progress_handler(db_, 1000, on_progress, budget_);
  sqlite3_busy_timeout(db_, 120'000);
  try {
    check_schema(db_, path_);
    Stmt q(db_, "SELECT value FROM meta WHERE key = 'fingerprint'", path_);
    if (!q.next()) throw StoreError(path + ": not a twinscale results store (no fingerprint)");
  } catch (const StoreError& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(std::string(e.what()) + " — is this a store written by `twinscale sweep`?");
  }
  try {
    schema_version_ = stored_schema_version(db_, path_);
    if (schema_version_ > kStoreSchemaVersion) throw StoreError(version_refusal(path, schema_version_));
  } catch (const StoreError&) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

Store::~Store() {
  if (db_) sqlite3_close(db_);
}

std::set<int64_t> Store::done() const {
  std::set<int64_t> out;
  Stmt q(db_, "SELECT id FROM points", path_);
  while (q.next())
    if (!out.insert(q.i64(0)).second) throw_repeated_point(q.i64(0));
  return out;
}

void Store::throw_repeated_point(int64_t id) const {
  // points.id is the table's INTEGER PRIMARY KEY: only a damaged file repeats one
  throw StoreError(path_ + ": point " + std::to_string(id) +
                   " has two rows in table points; the file is damaged (sqlite3 FILE 'pragma integrity_check' "
                   "says where)");
}

std::set<int64_t> Store::flow_done() const {
  std::set<int64_t> out;
  Stmt q(db_, "SELECT id FROM points WHERE flow_status IS NOT NULL", path_);
  while (q.next()) out.insert(q.i64(0));
  return out;
}

void Store::put(const Point& point, const PointResult& r) {
  Stmt ins(db_,
           "INSERT OR IGNORE INTO points(id, inputs, status, reason, gpus, tp, cp, ep, pp, vpp, dp, micro_batch, "
           "global_batch, memory_bytes, gpu_memory_bytes, ops, mode, iteration_time_s, tokens_per_s, tflops_per_gpu, "
           "mfu, compute_s, exposed_tp_s, exposed_ep_s, exposed_pp_s, exposed_dp_s, bubble_s, ettr, ettr_ci95, "
           "interruptions, lost_work_s, twinscale_version) "
           "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
           path_);
  TWINSCALE_ASSERT(point.id == r.id,
                   "the result of point " + std::to_string(r.id) + " stored as point " + std::to_string(point.id));
  int i = 0;
  ins.bind(++i, r.id);
  ins.bind(++i, inputs_json(point));
  ins.bind(++i, std::string(to_string(r.status)));
  ins.bind(++i, r.reason);
  for (int64_t v : {r.gpus, r.tp, r.cp, r.ep, r.pp, r.vpp, r.dp, r.micro_batch, r.global_batch}) ins.bind(++i, v);
  ins.bind(++i, r.memory_bytes);
  ins.bind(++i, r.gpu_memory_bytes);
  ins.bind(++i, r.ops);
  ins.bind(++i, r.mode);
  for (double v : {r.iteration_time_s, r.tokens_per_s, r.tflops_per_gpu, r.mfu, r.compute_s, r.exposed_tp_s,
                   r.exposed_ep_s, r.exposed_pp_s, r.exposed_dp_s, r.bubble_s})
    ins.bind(++i, v);
  for (double v : {r.ettr, r.ettr_ci95, r.interruptions, r.lost_work_s}) {
    ++i;
    if (r.campaign) ins.bind(i, v); // NULL otherwise
  }
  ins.bind(++i, twinscale_version());
  if (ins.step() != SQLITE_DONE)
    throw StoreError(path_ + ": cannot write point " + std::to_string(r.id) + ": " + failure(db_));
}

void Store::put_flow(const PointResult& r) {
  Stmt up(db_,
          "UPDATE points SET flow_status = ?, flow_reason = ?, flow_iteration_time_s = ?, flow_tokens_per_s = ?, "
          "flow_mfu = ?, flow_exposed_dp_s = ? WHERE id = ?",
          path_);
  up.bind(1, std::string(to_string(r.status))).bind(2, r.reason).bind(3, r.iteration_time_s).bind(4, r.tokens_per_s);
  up.bind(5, r.mfu).bind(6, r.exposed_dp_s).bind(7, r.id);
  if (up.step() != SQLITE_DONE)
    throw StoreError(path_ + ": cannot write the flow result of point " + std::to_string(r.id) + ": " + failure(db_));
}

StoreInfo Store::info() const {
  StoreInfo s;
  s.schema_version = schema_version_;
  Stmt q(db_, "SELECT key, value FROM meta", path_);
  while (q.next()) {
    const std::string k = q.text(0), v = q.text(1);
    if (k == "name")
      s.name = v;
    else if (k == "fingerprint")
      s.fingerprint = v;
    else if (k == "study_file")
      s.study_file = v;
    else if (k == "twinscale_version")
      s.version = v;
    else if (k == "points")
      s.points = meta_count(path_, k, v);
    else if (k == "flow_best")
      s.flow_best = meta_count(path_, k, v);
    else if (k == "axes")
      s.axes = meta_axes(path_, v);
  }
  return s;
}

namespace {

/// One row of the points table (the columns in Store::rows' order).
StoredPoint read_row(Row& row) {
  StoredPoint p;
  PointResult& r = p.result;
  int c = 0;
  r.id = row.integer(c++);
  row.set_id(r.id);
  p.inputs = row.text(c++);
  try { // the axis values, as sweep wrote them: a JSON object
    if (!schedules::parse_json_document(p.inputs, "inputs").is_object()) row.fail("inputs must be a JSON object");
  } catch (const schedules::JsonDocumentError& e) {
    row.fail(e.what());
  }
  r.status = row.status(c++);
  r.reason = row.text(c++);
  for (int64_t* v : {&r.gpus, &r.tp, &r.cp, &r.ep, &r.pp, &r.vpp, &r.dp, &r.micro_batch, &r.global_batch})
    *v = row.type(c) == SQLITE_NULL && (v == &r.cp || v == &r.ep) ? (++c, 0) : row.integer(c++);
  r.memory_bytes = row.real(c++);
  r.gpu_memory_bytes = row.real(c++);
  r.ops = row.integer(c++);
  r.mode = row.text(c++);
  for (double* v : {&r.iteration_time_s, &r.tokens_per_s, &r.tflops_per_gpu, &r.mfu, &r.compute_s, &r.exposed_tp_s,
                    &r.exposed_ep_s, &r.exposed_pp_s, &r.exposed_dp_s, &r.bubble_s})
    *v = row.real(c++);
  if (row.type(c) != SQLITE_NULL) {
    PointResult f;
    f.id = r.id;
    f.status = row.status(c);
    f.reason = row.text(c + 1);
    f.iteration_time_s = row.real(c + 2);
    f.tokens_per_s = row.real(c + 3);
    f.mfu = row.real(c + 4);
    f.exposed_dp_s = row.real(c + 5);
    f.mode = "flow";
    p.flow = f;
  }
  c += 6;
  if (row.type(c) != SQLITE_NULL) {
    r.campaign = true;
    r.ettr = row.real(c);
    r.ettr_ci95 = row.real(c + 1);
    r.interruptions = row.real(c + 2);
    r.lost_work_s = row.real(c + 3);
  }
  c += 4;
  p.version = row.text(c);
  return p;
}

} // namespace

std::vector<StoredPoint> Store::rows() const {
  std::vector<StoredPoint> out;
  // a version 1 store has no cp, ep or exposed_ep_s: read as NULL (cp and ep 0: unknown)
  const bool v1 = schema_version_ < 2;
  Stmt q(db_,
         std::string("SELECT id, inputs, status, reason, gpus, tp, ") + (v1 ? "NULL, NULL" : "cp, ep") +
             ", pp, vpp, dp, micro_batch, global_batch, memory_bytes, gpu_memory_bytes, ops, mode, iteration_time_s, "
             "tokens_per_s, tflops_per_gpu, mfu, compute_s, exposed_tp_s, " +
             (v1 ? "NULL" : "exposed_ep_s") +
             ", exposed_pp_s, exposed_dp_s, bubble_s, flow_status, flow_reason, flow_iteration_time_s, "
             "flow_tokens_per_s, flow_mfu, flow_exposed_dp_s, ettr, ettr_ci95, interruptions, lost_work_s, "
             "twinscale_version FROM points ORDER BY id",
         path_);
  Row row(q, path_);
  std::set<int64_t> ids;
  while (q.next()) {
    out.push_back(read_row(row));
    if (!ids.insert(out.back().result.id).second) throw_repeated_point(out.back().result.id);
  }
  return out;
}

} // namespace twinscale::study
