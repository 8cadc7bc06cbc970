//===- TuningDb.cpp - The tuning database through the C API ---------------===//
//
// kopt_tuning_db_add / kopt_tuning_db_trials over kopt::search::Database
// (include/kopt/Search/Database.h), which does the SQLite work: WAL,
// transactions begun with BEGIN IMMEDIATE, schema checks.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "kopt/Search/Database.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

#ifndef KOPT_VERSION
#define KOPT_VERSION "0.0.0"
#endif

using kopt::capi::guard;
using kopt::capi::makeError;
namespace search = kopt::search;

extern "C" {

kopt_error *kopt_tuning_db_add(const char *db_path, const char *record_json,
                               size_t length) {
  return guard("kopt_tuning_db_add", [&]() -> kopt_error * {
    if (!db_path || !*db_path)
      return makeError("kopt_tuning_db_add: db_path is empty");
    if (!record_json)
      return makeError("kopt_tuning_db_add: record_json is null");
    nlohmann::json j = nlohmann::json::parse(
        record_json, record_json + length, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object())
      return makeError("kopt_tuning_db_add: the record is not a JSON object");
    auto rec = search::recordFromJSON(j);
    if (!rec.ok())
      return makeError("kopt_tuning_db_add: " + rec.error());
    if (rec->koptVersion.empty())
      rec->koptVersion = KOPT_VERSION;
    auto db = search::Database::open(db_path);
    if (!db.ok())
      return makeError(db.error());
    if (search::Status st = (*db)->add(*rec); !st.ok())
      return makeError(st.message());
    return nullptr;
  });
}

kopt_error *kopt_tuning_db_trials(const char *db_path, const char *workload,
                                  char **json) {
  return guard("kopt_tuning_db_trials", [&]() -> kopt_error * {
    if (!db_path || !*db_path)
      return makeError("kopt_tuning_db_trials: db_path is empty");
    if (!workload || !*workload)
      return makeError("kopt_tuning_db_trials: workload is empty");
    if (!json)
      return makeError("kopt_tuning_db_trials: json is null");
    nlohmann::json out = nlohmann::json::array();
    struct stat st;
    // A missing or empty file holds no trials (and is not created).
    if (::stat(db_path, &st) == 0 && (st.st_size > 0 || !S_ISREG(st.st_mode))) {
      auto db = search::Database::open(db_path, /*readOnly=*/true);
      if (!db.ok())
        return makeError(db.error());
      auto trials = (*db)->trials(workload);
      if (!trials.ok())
        return makeError(trials.error());
      for (const search::TrialRecord &r : *trials)
        if (r.usable() && r.measurer == "gpu" && r.koptVersion == KOPT_VERSION)
          out.push_back(search::toJSON(r));
    }
    // Text a record holds that is not UTF-8 (written by another program)
    // comes back with U+FFFD in its place, as kopt-tune --export writes it.
    std::string text =
        out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    char *buffer = static_cast<char *>(std::malloc(text.size() + 1));
    if (!buffer)
      return makeError("kopt_tuning_db_trials: out of host memory");
    std::memcpy(buffer, text.c_str(), text.size() + 1);
    *json = buffer;
    return nullptr;
  });
}

void kopt_string_free(char *text) { std::free(text); }

} // extern "C"
