//===- Record.cpp - Trial records and their JSON ---------------------------===//
//
// See include/kopt/Search/Database.h: TrialRecord, its JSON form (the trial
// log, export/import and replay tables) and the JSON-lines reader.
//
//===----------------------------------------------------------------------===//

#include "kopt/Search/Database.h"
#include "kopt/Schedule/Schedule.h"

#include <cmath>
#include <istream>

using nlohmann::json;

namespace kopt::search {

namespace {

std::string typeName(const json &v) { return v.type_name(); }

/// Reads optional key `key` of object `j` into `out` (null and absent leave
/// the default). Returns an error naming the key when the type is wrong.
Status getString(const json &j, const char *key, std::string &out,
                 bool required) {
  auto it = j.find(key);
  if (it == j.end() || (!required && it->is_null())) {
    if (required)
      return Status::error(std::string(key) + ": missing");
    return Status::success();
  }
  if (!it->is_string())
    return Status::error(std::string(key) + ": expected a string, got " +
                         typeName(*it));
  out = it->get<std::string>();
  return Status::success();
}

Status getInt(const json &j, const char *key, int64_t &out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return Status::success();
  if (it->is_number_integer()) {
    if (it->is_number_unsigned() &&
        it->get<uint64_t>() >
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return Status::error(std::string(key) + ": out of range");
    out = it->get<int64_t>();
    return Status::success();
  }
  return Status::error(std::string(key) + ": expected an integer, got " +
                       typeName(*it));
}

Status getTime(const json &j, const char *key, double &out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return Status::success();
  if (!it->is_number())
    return Status::error(std::string(key) +
                         ": expected a number or null, got " + typeName(*it));
  out = it->get<double>();
  return Status::success();
}

Status getBool(const json &j, const char *key, bool &out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return Status::success();
  if (!it->is_boolean())
    return Status::error(std::string(key) + ": expected true or false, got " +
                         typeName(*it));
  out = it->get<bool>();
  return Status::success();
}

json timeJSON(double v) {
  if (!std::isfinite(v))
    return nullptr;
  return v;
}

/// Whether `s` is only blanks.
bool blank(const std::string &s) {
  return s.find_first_not_of(" \t\r\n\f\v") == std::string::npos;
}

} // namespace

//===----------------------------------------------------------------------===//
// TrialRecord and its JSON
//===----------------------------------------------------------------------===//

bool TrialRecord::usable() const {
  return status == "ok" && correct && std::isfinite(medianMs) && medianMs > 0;
}

std::string canonicalSchedule(const json &schedule) {
  // nlohmann::json objects keep their keys sorted; replace invalid UTF-8
  // rather than throw.
  return schedule.dump(-1, ' ', false, json::error_handler_t::replace);
}

json toJSON(const TrialRecord &r) {
  json j = json::object();
  j["workload"] = r.workload;
  j["ops"] = r.ops;
  j["kopt_version"] = r.koptVersion;
  json schedule = json::parse(r.schedule, nullptr, /*allow_exceptions=*/false);
  // add() only stores JSON objects; keep anything else as text.
  j["schedule"] = schedule.is_discarded() ? json(r.schedule) : schedule;
  j["strategy"] = r.strategy;
  j["measurer"] = r.measurer;
  j["status"] = r.status;
  j["error"] = r.error;
  j["registers"] = r.registers;
  j["spill_bytes"] = r.spillBytes;
  j["shared_bytes"] = r.sharedBytes;
  j["median_ms"] = timeJSON(r.medianMs);
  j["min_ms"] = timeJSON(r.minMs);
  j["max_ms"] = timeJSON(r.maxMs);
  j["mean_ms"] = timeJSON(r.meanMs);
  j["stddev_ms"] = timeJSON(r.stddevMs);
  j["p10_ms"] = timeJSON(r.p10Ms);
  j["p90_ms"] = timeJSON(r.p90Ms);
  j["runs"] = r.runs;
  j["correct"] = r.correct;
  j["device"] = r.device;
  j["sm_clock_mhz"] = r.smClockMHz;
  j["mem_clock_mhz"] = r.memClockMHz;
  j["session"] = r.session;
  j["time"] = r.time;
  return j;
}

Expected<TrialRecord> recordFromJSON(const json &j) {
  if (!j.is_object())
    return Status::error("a trial record must be a JSON object, got " +
                         typeName(j));
  TrialRecord r;
  KOPT_RETURN_IF_ERROR(getString(j, "workload", r.workload, true));
  KOPT_RETURN_IF_ERROR(getString(j, "ops", r.ops, true));
  KOPT_RETURN_IF_ERROR(getString(j, "kopt_version", r.koptVersion, true));
  auto schedule = j.find("schedule");
  if (schedule == j.end())
    return Status::error("schedule: missing");
  if (!schedule->is_object())
    return Status::error("schedule: expected a JSON object, got " +
                         typeName(*schedule));
  r.schedule = canonicalSchedule(*schedule);
  KOPT_RETURN_IF_ERROR(getString(j, "status", r.status, true));
  KOPT_RETURN_IF_ERROR(getString(j, "strategy", r.strategy, false));
  KOPT_RETURN_IF_ERROR(getString(j, "measurer", r.measurer, false));
  KOPT_RETURN_IF_ERROR(getString(j, "error", r.error, false));
  KOPT_RETURN_IF_ERROR(getInt(j, "registers", r.registers));
  KOPT_RETURN_IF_ERROR(getInt(j, "spill_bytes", r.spillBytes));
  KOPT_RETURN_IF_ERROR(getInt(j, "shared_bytes", r.sharedBytes));
  KOPT_RETURN_IF_ERROR(getTime(j, "median_ms", r.medianMs));
  KOPT_RETURN_IF_ERROR(getTime(j, "min_ms", r.minMs));
  KOPT_RETURN_IF_ERROR(getTime(j, "max_ms", r.maxMs));
  KOPT_RETURN_IF_ERROR(getTime(j, "mean_ms", r.meanMs));
  KOPT_RETURN_IF_ERROR(getTime(j, "stddev_ms", r.stddevMs));
  KOPT_RETURN_IF_ERROR(getTime(j, "p10_ms", r.p10Ms));
  KOPT_RETURN_IF_ERROR(getTime(j, "p90_ms", r.p90Ms));
  KOPT_RETURN_IF_ERROR(getInt(j, "runs", r.runs));
  KOPT_RETURN_IF_ERROR(getBool(j, "correct", r.correct));
  KOPT_RETURN_IF_ERROR(getString(j, "device", r.device, false));
  KOPT_RETURN_IF_ERROR(getInt(j, "sm_clock_mhz", r.smClockMHz));
  KOPT_RETURN_IF_ERROR(getInt(j, "mem_clock_mhz", r.memClockMHz));
  KOPT_RETURN_IF_ERROR(getString(j, "session", r.session, false));
  KOPT_RETURN_IF_ERROR(getString(j, "time", r.time, false));
  return r;
}

Expected<std::vector<TrialRecord>> readRecordsJSONL(std::istream &in,
                                                   const std::string &sourceName) {
  std::vector<TrialRecord> records;
  std::string line;
  int64_t lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (blank(line))
      continue;
    std::string where = sourceName + ":" + std::to_string(lineNo) + ": ";
    std::string error;
    std::optional<json> j = kopt::schedule::parseJSON(line, error);
    if (!j)
      return Status::error(where + "not a JSON line (" + error + ")");
    Expected<TrialRecord> r = recordFromJSON(*j);
    if (!r.ok())
      return Status::error(where + r.error());
    records.push_back(r.take());
  }
  if (in.bad())
    return Status::error(sourceName + ": reading failed after line " +
                         std::to_string(lineNo));
  return records;
}

} // namespace kopt::search
