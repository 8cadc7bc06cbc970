//===- Database.h - the tuning database of the schedule search -*- C++ -*-===//
//
// One SQLite file holds every trial of every tuning run: a schedule of one
// kernel's workload, compiled and measured (or rejected), one row per trial.
// kopt-tune appends to it, the compiler asks it for the best schedule of a
// workload, and JSON lines carry it between machines (export / import).
//
// The file: a table `trials` with one column per field of TrialRecord (REAL
// for times, NULL for NaN and for unknown resources), indexes on (workload,
// kopt_version) and (session), and a table `meta(key, value)` whose
// schema_version is 1. WAL journal; writes are transactions begun with BEGIN
// IMMEDIATE, so that two tuners writing at once serialize (the second waits
// up to the busy timeout) and a killed writer leaves whole transactions only.
//
// Error behaviour: nothing here throws or aborts. Failures come back as a
// Status or an Expected<T> whose message names the database file (or the
// imported source and line) and the cause.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_SEARCH_DATABASE_H
#define KOPT_SEARCH_DATABASE_H

#include "kopt/Manifest/Error.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace kopt::search {

using kopt::manifest::Expected;
using kopt::manifest::Status;

/// The schema version this kopt writes and reads.
constexpr int kDatabaseSchemaVersion = 1;

/// One trial of a tuning run: a schedule of one kernel's workload, compiled
/// and measured (or rejected). Times in ms; NaN when not measured.
struct TrialRecord {
  static constexpr double NaN = std::numeric_limits<double>::quiet_NaN();

  int64_t id = 0; // rowid; set by Database::add
  /// Workload key, e.g. "matmul/4096x4096x4096/bf16,bf16->bf16/ak,bk/sm_90a".
  std::string workload;
  /// The kernel's op chain, e.g. "matmul" or "matmul+add+gelu".
  std::string ops;
  /// The kopt version that produced it, e.g. "0.1.0".
  std::string koptVersion;
  /// The schedule as canonical JSON text (compact, keys sorted).
  std::string schedule;
  /// "grid", "random", "evolutionary", "heuristic", "external", "import"...
  std::string strategy;
  /// "gpu", "model" (an estimate), "replay".
  std::string measurer;
  /// "ok", "rejected", "compile_error", "run_error", "wrong", "timeout".
  std::string status;
  /// Short summary ("" when ok).
  std::string error;
  /// ptxas / runtime resources; -1 unknown.
  int64_t registers = -1, spillBytes = -1, sharedBytes = -1;
  double medianMs = NaN, minMs = NaN, maxMs = NaN, meanMs = NaN, stddevMs = NaN,
         p10Ms = NaN, p90Ms = NaN;
  int64_t runs = 0;
  /// Passed the check against the reference (and the audits).
  bool correct = false;
  /// E.g. "NVIDIA H200".
  std::string device;
  int64_t smClockMHz = -1, memClockMHz = -1;
  /// The tuning session that ran it (kopt-tune --resume continues one).
  std::string session;
  /// ISO-8601 UTC ("2026-12-02T13:40:00Z"); add() fills it when empty.
  std::string time;

  /// Whether it counts as a measured, correct result (status "ok", correct,
  /// median finite > 0).
  bool usable() const;
};

/// JSON of a record with snake_case keys (workload, ops, kopt_version,
/// schedule (as a JSON object, not text), strategy, measurer, status, error,
/// registers, spill_bytes, shared_bytes, median_ms, min_ms, max_ms, mean_ms,
/// stddev_ms, p10_ms, p90_ms, runs, correct, device, sm_clock_mhz,
/// mem_clock_mhz, session, time; NaN times as null). The id is not written.
nlohmann::json toJSON(const TrialRecord &r);
/// The record of toJSON's JSON. workload, ops, kopt_version, schedule (an
/// object) and status are required; the rest are optional with the defaults
/// of TrialRecord (null reads as the default). A missing or wrongly-typed key
/// is an error naming the key; unknown keys are ignored.
Expected<TrialRecord> recordFromJSON(const nlohmann::json &j);
/// Canonical text of a schedule JSON: compact dump with sorted keys.
std::string canonicalSchedule(const nlohmann::json &schedule);

/// A connection to one tuning database file. Not to be shared between threads
/// or carried across fork(): each process opens its own.
/// The trial records of JSON lines (toJSON's format; blank lines skipped), as
/// Database::importJSONL and the replay measurer read them. A malformed line
/// is an error naming `sourceName` and the line number.
Expected<std::vector<TrialRecord>> readRecordsJSONL(std::istream &in,
                                                   const std::string &sourceName);

class Database {
public:
  /// Opens (creating when missing) the database at `path`: WAL journal, a
  /// busy timeout (a second tuner writing at once waits instead of failing),
  /// schema created or checked. A file that is not a kopt tuning database, or
  /// of a newer schema, is an error naming the path; a non-SQLite file is an
  /// error and is never written. `readOnly` opens without creating or writing.
  static Expected<std::unique_ptr<Database>> open(const std::string &path,
                                                  bool readOnly = false,
                                                  int busyTimeoutMs = 10000);
  ~Database();
  Database(const Database &) = delete;
  Database &operator=(const Database &) = delete;

  const std::string &path() const;

  /// Adds one trial (one transaction); sets r.id, r.time when empty, and
  /// rewrites r.schedule in canonical form (it must be a JSON object's text).
  Status add(TrialRecord &r);
  /// Adds many in one transaction (all or nothing); sets ids and times as
  /// add() does, only when the transaction committed.
  Status addAll(std::vector<TrialRecord> &rs);

  /// The best usable trial (least median; the first added among equals) of
  /// `workload` made by kopt `koptVersion` with measurer `measurer` (default
  /// "gpu": estimates and replays never become a compile's choice); `ops`
  /// non-empty restricts to that op chain. nullopt when there is none.
  Expected<std::optional<TrialRecord>>
  best(const std::string &workload, const std::string &ops,
       const std::string &koptVersion, const std::string &measurer = "gpu");
  /// Usable trials of `workload` (any measurer) recorded by other kopt
  /// versions than `koptVersion` (they are ignored by best(); callers say so).
  Expected<int64_t> countOtherVersions(const std::string &workload,
                                       const std::string &koptVersion);
  /// Trials filtered by each non-empty argument, in id order.
  Expected<std::vector<TrialRecord>> trials(const std::string &workload = "",
                                            const std::string &session = "");
  /// Whether a trial of (workload, ops, schedule text) exists in `session`
  /// (for --resume). A schedule that parses as JSON is compared in canonical
  /// form.
  Expected<bool> has(const std::string &session, const std::string &workload,
                     const std::string &ops, const std::string &schedule);

  /// Every trial as JSON lines (toJSON), in id order; returns the count.
  Expected<int64_t> exportJSONL(std::ostream &out);
  /// Adds the JSON lines of `in` (blank lines skipped) in one transaction: a
  /// malformed line imports nothing and the error names `sourceName` and the
  /// line number. Trials already present (same workload, ops, kopt_version,
  /// schedule, session, time, median) are skipped; records are kept as they
  /// are (a missing time stays empty). Returns the number added.
  Expected<int64_t> importJSONL(std::istream &in,
                                const std::string &sourceName);

  /// PRAGMA integrity_check == "ok".
  Expected<bool> integrityOk();

private:
  Database(sqlite3 *db, std::string path, bool readOnly);
  Status checkWritable() const;
  Status insertAll(std::vector<TrialRecord> &rs, bool fillTime);

  sqlite3 *db = nullptr;
  std::string dbPath;
  bool readOnly = false;
};

} // namespace kopt::search

#endif // KOPT_SEARCH_DATABASE_H
