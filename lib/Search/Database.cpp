//===- Database.cpp - the tuning database of the schedule search ----------===//
//
// SQLite through its C API: prepared statements with bound parameters only,
// writes in BEGIN IMMEDIATE transactions, WAL journal with synchronous=NORMAL
// (a killed process loses nothing committed; a power loss may lose the last
// transactions, never the file's consistency).
//
//===----------------------------------------------------------------------===//

#include "kopt/Search/Database.h"
#include "kopt/Schedule/Schedule.h"

#include <sqlite3.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <istream>
#include <ostream>
#include <set>
#include <sys/stat.h>

using nlohmann::json;

namespace kopt::search {

namespace {

/// The columns of `trials` after id, in the order every statement uses.
const char *const kColumns[] = {
    "workload",     "ops",          "kopt_version",  "schedule",  "strategy",
    "measurer",     "status",       "error",         "registers", "spill_bytes",
    "shared_bytes", "median_ms",    "min_ms",        "max_ms",    "mean_ms",
    "stddev_ms",    "p10_ms",       "p90_ms",        "runs",      "correct",
    "device",       "sm_clock_mhz", "mem_clock_mhz", "session",   "time"};
constexpr int kNumColumns = sizeof(kColumns) / sizeof(kColumns[0]);

const char *const kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS trials(
  id INTEGER PRIMARY KEY,
  workload TEXT NOT NULL,
  ops TEXT NOT NULL,
  kopt_version TEXT NOT NULL,
  schedule TEXT NOT NULL,
  strategy TEXT NOT NULL DEFAULT '',
  measurer TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL,
  error TEXT NOT NULL DEFAULT '',
  registers INTEGER,
  spill_bytes INTEGER,
  shared_bytes INTEGER,
  median_ms REAL,
  min_ms REAL,
  max_ms REAL,
  mean_ms REAL,
  stddev_ms REAL,
  p10_ms REAL,
  p90_ms REAL,
  runs INTEGER NOT NULL DEFAULT 0,
  correct INTEGER NOT NULL DEFAULT 0,
  device TEXT NOT NULL DEFAULT '',
  sm_clock_mhz INTEGER,
  mem_clock_mhz INTEGER,
  session TEXT NOT NULL DEFAULT '',
  time TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS trials_workload_version
  ON trials(workload, kopt_version);
CREATE INDEX IF NOT EXISTS trials_session ON trials(session);
)sql";

/// The SQL conditions of TrialRecord::usable().
const char *const kUsable =
    "status = 'ok' AND correct = 1 AND median_ms > 0 AND median_ms < 9e999";

/// INSERT of the kNumColumns fields as parameters ?1...
std::string insertSQL() {
  std::string sql = "INSERT INTO trials(";
  for (int i = 0; i < kNumColumns; ++i)
    sql += std::string(i ? ", " : "") + kColumns[i];
  sql += ") VALUES (";
  for (int i = 0; i < kNumColumns; ++i)
    sql += std::string(i ? ", ?" : "?") + std::to_string(i + 1);
  return sql + ")";
}

std::string selectColumns() {
  std::string s = "SELECT id";
  for (const char *c : kColumns)
    s += std::string(", ") + c;
  return s + " FROM trials";
}

/// One prepared statement; finalized when destroyed.
class Stmt {
public:
  Stmt(sqlite3 *db, const std::string &sql) : db(db) {
    rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr);
  }
  ~Stmt() { sqlite3_finalize(stmt); }
  Stmt(const Stmt &) = delete;
  Stmt &operator=(const Stmt &) = delete;

  bool prepared() const { return rc == SQLITE_OK && stmt; }
  std::string errorText() const { return sqlite3_errmsg(db); }

  void bind(int i, const std::string &s) {
    sqlite3_bind_text(stmt, i, s.data(), static_cast<int>(s.size()),
                      SQLITE_TRANSIENT);
  }
  void bind(int i, int64_t v) { sqlite3_bind_int64(stmt, i, v); }
  /// Negative resources are unknown: NULL.
  void bindResource(int i, int64_t v) {
    if (v < 0)
      sqlite3_bind_null(stmt, i);
    else
      sqlite3_bind_int64(stmt, i, v);
  }
  void bind(int i, double v) {
    if (std::isnan(v))
      sqlite3_bind_null(stmt, i);
    else
      sqlite3_bind_double(stmt, i, v);
  }

  /// SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(stmt); }
  void reset() {
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
  }

  std::string text(int c) const {
    const unsigned char *p = sqlite3_column_text(stmt, c);
    if (!p)
      return "";
    return std::string(reinterpret_cast<const char *>(p),
                       sqlite3_column_bytes(stmt, c));
  }
  int64_t integer(int c, int64_t ifNull) const {
    if (sqlite3_column_type(stmt, c) == SQLITE_NULL)
      return ifNull;
    return sqlite3_column_int64(stmt, c);
  }
  double real(int c) const {
    if (sqlite3_column_type(stmt, c) == SQLITE_NULL)
      return TrialRecord::NaN;
    return sqlite3_column_double(stmt, c);
  }

private:
  sqlite3 *db;
  sqlite3_stmt *stmt = nullptr;
  int rc;
};

/// Binds the kNumColumns fields of `r` from parameter `first` on.
void bindRecord(Stmt &s, const TrialRecord &r, int first) {
  int i = first;
  s.bind(i++, r.workload);
  s.bind(i++, r.ops);
  s.bind(i++, r.koptVersion);
  s.bind(i++, r.schedule);
  s.bind(i++, r.strategy);
  s.bind(i++, r.measurer);
  s.bind(i++, r.status);
  s.bind(i++, r.error);
  s.bindResource(i++, r.registers);
  s.bindResource(i++, r.spillBytes);
  s.bindResource(i++, r.sharedBytes);
  for (double v :
       {r.medianMs, r.minMs, r.maxMs, r.meanMs, r.stddevMs, r.p10Ms, r.p90Ms})
    s.bind(i++, v);
  s.bind(i++, r.runs);
  s.bind(i++, static_cast<int64_t>(r.correct ? 1 : 0));
  s.bind(i++, r.device);
  s.bindResource(i++, r.smClockMHz);
  s.bindResource(i++, r.memClockMHz);
  s.bind(i++, r.session);
  s.bind(i++, r.time);
}

/// The record of the current row of a selectColumns() statement.
TrialRecord readRecord(const Stmt &s) {
  TrialRecord r;
  int c = 0;
  r.id = s.integer(c++, 0);
  r.workload = s.text(c++);
  r.ops = s.text(c++);
  r.koptVersion = s.text(c++);
  r.schedule = s.text(c++);
  r.strategy = s.text(c++);
  r.measurer = s.text(c++);
  r.status = s.text(c++);
  r.error = s.text(c++);
  r.registers = s.integer(c++, -1);
  r.spillBytes = s.integer(c++, -1);
  r.sharedBytes = s.integer(c++, -1);
  for (double *v : {&r.medianMs, &r.minMs, &r.maxMs, &r.meanMs, &r.stddevMs,
                    &r.p10Ms, &r.p90Ms})
    *v = s.real(c++);
  r.runs = s.integer(c++, 0);
  r.correct = s.integer(c++, 0) != 0;
  r.device = s.text(c++);
  r.smClockMHz = s.integer(c++, -1);
  r.memClockMHz = s.integer(c++, -1);
  r.session = s.text(c++);
  r.time = s.text(c++);
  return r;
}

std::string nowUTC() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// Runs SQL without parameters (pragmas, BEGIN/COMMIT, the schema).
int exec(sqlite3 *db, const char *sql) {
  return sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
}

/// A BEGIN IMMEDIATE transaction, rolled back unless committed.
class Transaction {
public:
  explicit Transaction(sqlite3 *db) : db(db) {
    open = exec(db, "BEGIN IMMEDIATE") == SQLITE_OK;
  }
  ~Transaction() {
    if (open)
      exec(db, "ROLLBACK");
  }
  bool begun() const { return open; }
  int commit() {
    int c = exec(db, "COMMIT");
    if (c == SQLITE_OK)
      open = false;
    return c;
  }

private:
  sqlite3 *db;
  bool open = false;
};

/// Whether `path` names an existing file system entry.
bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

} // namespace

namespace {

/// Checks an open database's schema: its schema_version (kopt's, not newer
/// than this kopt reads) and the columns of its `trials` table.
Status checkSchema(sqlite3 *raw, const std::string &path) {
  int rc;
  auto fail = [&](const std::string &what) {
    return Status::error(path + ": " + what + ": " + sqlite3_errmsg(raw));
  };
  auto notOurs = [&](const std::string &why) {
    return Status::error(path + ": not a kopt tuning database (" + why +
                         "); it is left as it is");
  };
  // The schema version.
  {
    Stmt s(raw, "SELECT value FROM meta WHERE key = 'schema_version'");
    if (!s.prepared())
      return notOurs(std::string("its table 'meta' cannot be read: ") +
                     sqlite3_errmsg(raw));
    rc = s.step();
    if (rc == SQLITE_DONE)
      return notOurs("no schema_version in its table 'meta'");
    if (rc != SQLITE_ROW)
      return fail("cannot read the schema version");
    std::string text = s.text(0);
    char *end = nullptr;
    long version = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || version < 1)
      return notOurs("schema_version is '" + kopt::schedule::abbreviate(text) +
                     "'");
    if (version > kDatabaseSchemaVersion)
      return Status::error(path + ": tuning database of schema version " +
                           text + ", newer than this kopt reads (" +
                           std::to_string(kDatabaseSchemaVersion) +
                           "): use a newer kopt, or another database file");
  }
  // The trials table and its columns.
  {
    Stmt s(raw, "SELECT name FROM pragma_table_info('trials')");
    if (!s.prepared())
      return fail("cannot read the schema");
    std::set<std::string> columns;
    while ((rc = s.step()) == SQLITE_ROW)
      columns.insert(s.text(0));
    if (rc != SQLITE_DONE)
      return fail("cannot read the schema");
    if (columns.empty())
      return notOurs("no table 'trials'");
    for (const char *c : kColumns)
      if (!columns.count(c))
        return notOurs(std::string("its table 'trials' has no column '") + c +
                       "'");
  }
  return Status::success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Database
//===----------------------------------------------------------------------===//

Database::Database(sqlite3 *db, std::string path, bool readOnly)
    : db(db), dbPath(std::move(path)), readOnly(readOnly) {}

Database::~Database() { sqlite3_close_v2(db); }

const std::string &Database::path() const { return dbPath; }

Expected<std::unique_ptr<Database>>
Database::open(const std::string &path, bool readOnly, int busyTimeoutMs) {
  if (path.empty())
    return Status::error("tuning database: empty path");
  if (readOnly && !exists(path))
    return Status::error(path + ": no such tuning database (" +
                         std::strerror(ENOENT) + ")");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return Status::error(path + ": is a folder, not a tuning database");
  // A FIFO or a device would block or answer garbage; never open one.
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Status::error(path + ": not a regular file, not a tuning database");
  if (!readOnly && !exists(path)) {
    std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos
                                         ? 0
                                         : path.find_last_of('/'));
    if (!dir.empty() && !exists(dir))
      return Status::error(path + ": cannot create the tuning database: its "
                                  "folder '" +
                           dir + "' does not exist");
  }
  sqlite3 *raw = nullptr;
  int flags = readOnly ? SQLITE_OPEN_READONLY
                       : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  // The object owns the handle from here on, even a failed one.
  std::unique_ptr<Database> d(new Database(raw, path, readOnly));
  if (rc != SQLITE_OK)
    return Status::error(path + ": cannot open the tuning database: " +
                         (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, busyTimeoutMs);
  auto fail = [&](const std::string &what) {
    return Status::error(path + ": " + what + ": " + sqlite3_errmsg(raw));
  };

  // Read before anything writes: a file that is not SQLite fails here,
  // untouched.
  std::vector<std::string> tables;
  {
    Stmt s(raw, "SELECT name FROM sqlite_master WHERE type = 'table' AND "
                "name NOT LIKE 'sqlite_%' ORDER BY name");
    if (!s.prepared()) {
      if ((sqlite3_errcode(raw) & 0xff) == SQLITE_NOTADB)
        return Status::error(path +
                             ": not a kopt tuning database (not an SQLite "
                             "database file; it is left as it is)");
      return fail("cannot read the database");
    }
    while ((rc = s.step()) == SQLITE_ROW)
      tables.push_back(s.text(0));
    if (rc != SQLITE_DONE)
      return fail("cannot read the database");
  }
  auto hasTable = [&](const char *name) {
    return std::find(tables.begin(), tables.end(), name) != tables.end();
  };
  auto notOurs = [&](const std::string &why) {
    return Status::error(path + ": not a kopt tuning database (" + why +
                         "); it is left as it is");
  };
  auto tableList = [&] {
    std::string s;
    for (const std::string &t : tables)
      s += (s.empty() ? "" : ", ") + t;
    return s;
  };
  if (!tables.empty() && !hasTable("meta"))
    return notOurs("no table 'meta'; its tables: " + tableList());
  if (!tables.empty()) {
    // Checked before anything writes (the WAL switch below changes the
    // file): another program's database with a table 'meta' stays as it is.
    KOPT_RETURN_IF_ERROR(checkSchema(raw, path));
  } else {
    // No tables: a new or empty file, unless another program marked it as
    // its own or keeps other schema objects (views, triggers) in it.
    Stmt objects(raw, "SELECT count(*) FROM sqlite_master");
    Stmt appId(raw, "PRAGMA application_id");
    Stmt userVersion(raw, "PRAGMA user_version");
    if (!objects.prepared() || objects.step() != SQLITE_ROW ||
        !appId.prepared() || appId.step() != SQLITE_ROW ||
        !userVersion.prepared() || userVersion.step() != SQLITE_ROW)
      return fail("cannot read the database");
    if (objects.text(0) != "0")
      return notOurs("no tables but other schema objects (views, triggers or "
                     "indexes)");
    if (appId.text(0) != "0" || userVersion.text(0) != "0")
      return notOurs("its header's application_id " + appId.text(0) +
                     " / user_version " + userVersion.text(0) +
                     " mark it as another program's");
  }

  if (!readOnly) {
    // WAL journal: readers never block the writer. Persistent in the file.
    // Switching the journal needs the file to itself and, unlike other
    // locks, does not wait through the busy handler: another process
    // opening the new file at the same moment holds it briefly. Retry
    // until the busy timeout.
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(busyTimeoutMs);
    while ((rc = exec(raw, "PRAGMA journal_mode = WAL")) != SQLITE_OK) {
      if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
        return fail("cannot use the WAL journal");
      if (std::chrono::steady_clock::now() >= deadline)
        return fail("cannot use the WAL journal (waited " +
                    std::to_string(busyTimeoutMs) + " ms)");
      sqlite3_sleep(2);
    }
    if (exec(raw, "PRAGMA synchronous = NORMAL") != SQLITE_OK)
      return fail("cannot set synchronous mode");
    if (tables.empty()) {
      // A new file (or two tuners creating it at once: the second finds
      // the schema there and only checks it).
      Transaction t(raw);
      if (!t.begun())
        return fail("cannot create the schema");
      if (exec(raw, kSchema) != SQLITE_OK)
        return fail("cannot create the schema");
      Stmt s(raw, "INSERT OR IGNORE INTO meta(key, value) VALUES "
                  "('schema_version', ?1)");
      s.bind(1, std::to_string(kDatabaseSchemaVersion));
      if (!s.prepared() || s.step() != SQLITE_DONE)
        return fail("cannot create the schema");
      if (t.commit() != SQLITE_OK)
        return fail("cannot create the schema");
      tables = {"meta", "trials"};
    }
  } else if (tables.empty()) {
    return notOurs("it has no tables");
  }

  KOPT_RETURN_IF_ERROR(checkSchema(raw, path));
  return d;
}

Status Database::checkWritable() const {
  if (readOnly)
    return Status::error(dbPath + ": opened read-only: cannot add trials");
  return Status::success();
}

Status Database::insertAll(std::vector<TrialRecord> &rs, bool fillTime) {
  KOPT_RETURN_IF_ERROR(checkWritable());
  // Check and canonicalize into a copy: `rs` changes only on commit.
  std::vector<TrialRecord> copy = rs;
  std::string now = nowUTC();
  for (size_t i = 0; i < copy.size(); ++i) {
    TrialRecord &r = copy[i];
    std::string which = copy.size() == 1
                            ? std::string("trial")
                            : "trial " + std::to_string(i) + " of the batch";
    json schedule =
        json::parse(r.schedule, nullptr, /*allow_exceptions=*/false);
    if (schedule.is_discarded() || !schedule.is_object())
      return Status::error(dbPath + ": " + which +
                           ": schedule is not a JSON object's text: '" +
                           kopt::schedule::abbreviate(r.schedule) + "'");
    r.schedule = canonicalSchedule(schedule);
    if (fillTime && r.time.empty())
      r.time = now;
  }
  auto fail = [&](const char *what) {
    return Status::error(dbPath + ": " + what + ": " + sqlite3_errmsg(db));
  };
  Transaction t(db);
  if (!t.begun())
    return fail("cannot begin a transaction");
  Stmt s(db, insertSQL());
  if (!s.prepared())
    return fail("cannot add trials");
  for (TrialRecord &r : copy) {
    s.reset();
    bindRecord(s, r, 1);
    if (s.step() != SQLITE_DONE)
      return fail("cannot add a trial");
    r.id = sqlite3_last_insert_rowid(db);
  }
  if (t.commit() != SQLITE_OK)
    return fail("cannot commit");
  rs = std::move(copy);
  return Status::success();
}

Status Database::add(TrialRecord &r) {
  std::vector<TrialRecord> one{r};
  KOPT_RETURN_IF_ERROR(insertAll(one, /*fillTime=*/true));
  r = std::move(one.front());
  return Status::success();
}

Status Database::addAll(std::vector<TrialRecord> &rs) {
  return insertAll(rs, /*fillTime=*/true);
}

Expected<std::optional<TrialRecord>>
Database::best(const std::string &workload, const std::string &ops,
               const std::string &koptVersion, const std::string &measurer) {
  std::string sql = selectColumns() +
                    " WHERE workload = ?1 AND kopt_version = ?2 AND "
                    "measurer = ?3 AND " +
                    kUsable;
  if (!ops.empty())
    sql += " AND ops = ?4";
  sql += " ORDER BY median_ms ASC, id ASC LIMIT 1";
  Stmt s(db, sql);
  if (!s.prepared())
    return Status::error(dbPath +
                         ": cannot query the best trial: " + s.errorText());
  s.bind(1, workload);
  s.bind(2, koptVersion);
  s.bind(3, measurer);
  if (!ops.empty())
    s.bind(4, ops);
  int rc = s.step();
  if (rc == SQLITE_DONE)
    return std::optional<TrialRecord>();
  if (rc != SQLITE_ROW)
    return Status::error(dbPath +
                         ": cannot query the best trial: " + s.errorText());
  return std::optional<TrialRecord>(readRecord(s));
}

Expected<int64_t> Database::countOtherVersions(const std::string &workload,
                                               const std::string &koptVersion) {
  Stmt s(db, std::string("SELECT count(*) FROM trials WHERE workload = ?1 AND "
                         "kopt_version <> ?2 AND ") +
                 kUsable);
  if (!s.prepared())
    return Status::error(dbPath + ": cannot count trials: " + s.errorText());
  s.bind(1, workload);
  s.bind(2, koptVersion);
  if (s.step() != SQLITE_ROW)
    return Status::error(dbPath + ": cannot count trials: " + s.errorText());
  return s.integer(0, 0);
}

Expected<std::vector<TrialRecord>>
Database::trials(const std::string &workload, const std::string &session) {
  std::string sql = selectColumns();
  if (!workload.empty() && !session.empty())
    sql += " WHERE workload = ?1 AND session = ?2";
  else if (!workload.empty())
    sql += " WHERE workload = ?1";
  else if (!session.empty())
    sql += " WHERE session = ?2";
  sql += " ORDER BY id";
  Stmt s(db, sql);
  if (!s.prepared())
    return Status::error(dbPath + ": cannot list trials: " + s.errorText());
  if (!workload.empty())
    s.bind(1, workload);
  if (!session.empty())
    s.bind(2, session);
  std::vector<TrialRecord> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW)
    out.push_back(readRecord(s));
  if (rc != SQLITE_DONE)
    return Status::error(dbPath + ": cannot list trials: " + s.errorText());
  return out;
}

Expected<bool> Database::has(const std::string &session,
                             const std::string &workload,
                             const std::string &ops,
                             const std::string &schedule) {
  json parsed = json::parse(schedule, nullptr, /*allow_exceptions=*/false);
  std::string text =
      parsed.is_discarded() ? schedule : canonicalSchedule(parsed);
  Stmt s(db, "SELECT 1 FROM trials WHERE session = ?1 AND workload = ?2 AND "
             "ops = ?3 AND schedule = ?4 LIMIT 1");
  if (!s.prepared())
    return Status::error(dbPath + ": cannot look up a trial: " + s.errorText());
  s.bind(1, session);
  s.bind(2, workload);
  s.bind(3, ops);
  s.bind(4, text);
  int rc = s.step();
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return Status::error(dbPath + ": cannot look up a trial: " + s.errorText());
  return rc == SQLITE_ROW;
}

Expected<int64_t> Database::exportJSONL(std::ostream &out) {
  Stmt s(db, selectColumns() + " ORDER BY id");
  if (!s.prepared())
    return Status::error(dbPath + ": cannot export: " + s.errorText());
  int64_t n = 0;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    out << toJSON(readRecord(s))
               .dump(-1, ' ', false, json::error_handler_t::replace)
        << '\n';
    if (!out)
      return Status::error(dbPath +
                           ": exporting: writing the output failed "
                           "after " +
                           std::to_string(n) + " trials");
    ++n;
  }
  if (rc != SQLITE_DONE)
    return Status::error(dbPath + ": cannot export: " + s.errorText());
  out.flush();
  if (!out)
    return Status::error(dbPath + ": exporting: writing the output failed");
  return n;
}

Expected<int64_t> Database::importJSONL(std::istream &in,
                                        const std::string &sourceName) {
  KOPT_RETURN_IF_ERROR(checkWritable());
  // Parse everything first: a bad line imports nothing.
  Expected<std::vector<TrialRecord>> read = readRecordsJSONL(in, sourceName);
  if (!read.ok())
    return read.status();
  std::vector<TrialRecord> records = read.take();

  auto fail = [&](const char *what) {
    return Status::error(dbPath + ": importing " + sourceName + ": " + what +
                         ": " + sqlite3_errmsg(db));
  };
  Transaction t(db);
  if (!t.begun())
    return fail("cannot begin a transaction");
  Stmt present(db, "SELECT 1 FROM trials WHERE workload = ?1 AND ops = ?2 AND "
                   "kopt_version = ?3 AND schedule = ?4 AND session = ?5 AND "
                   "time = ?6 AND median_ms IS ?7 LIMIT 1");
  Stmt insert(db, insertSQL());
  if (!present.prepared() || !insert.prepared())
    return fail("cannot prepare");
  int64_t added = 0;
  for (const TrialRecord &r : records) {
    present.reset();
    present.bind(1, r.workload);
    present.bind(2, r.ops);
    present.bind(3, r.koptVersion);
    present.bind(4, r.schedule);
    present.bind(5, r.session);
    present.bind(6, r.time);
    present.bind(7, r.medianMs);
    int rc = present.step();
    if (rc == SQLITE_ROW)
      continue;
    if (rc != SQLITE_DONE)
      return fail("cannot look up a trial");
    insert.reset();
    bindRecord(insert, r, 1);
    if (insert.step() != SQLITE_DONE)
      return fail("cannot add a trial");
    ++added;
  }
  if (t.commit() != SQLITE_OK)
    return fail("cannot commit");
  return added;
}

Expected<bool> Database::integrityOk() {
  Stmt s(db, "PRAGMA integrity_check");
  if (!s.prepared())
    return Status::error(dbPath + ": cannot check integrity: " + s.errorText());
  std::vector<std::string> rows;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW)
    rows.push_back(s.text(0));
  if (rc != SQLITE_DONE) {
    // A corrupt file can fail the check itself.
    if ((sqlite3_errcode(db) & 0xff) == SQLITE_CORRUPT ||
        (sqlite3_errcode(db) & 0xff) == SQLITE_NOTADB)
      return false;
    return Status::error(dbPath + ": cannot check integrity: " + s.errorText());
  }
  return rows.size() == 1 && rows[0] == "ok";
}

} // namespace kopt::search
