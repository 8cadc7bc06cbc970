//===- DatabaseTestUtil.h - The tuning database tests' fixture -*- C++ -*-===//
//
// Shared by DatabaseTest.cpp (records, queries, JSON lines, bad files) and
// DatabaseProcessTest.cpp (two writers, a killed writer).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TEST_UNIT_DATABASETESTUTIL_H
#define KOPT_TEST_UNIT_DATABASETESTUTIL_H

#include "kopt/Search/Database.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <poll.h>
#include <random>
#include <regex>
#include <set>
#include <signal.h>
#include <sstream>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>

using namespace kopt::search;
using nlohmann::json;
namespace fs = std::filesystem;

namespace kopt::search::dbtest {


inline constexpr double NaN = TrialRecord::NaN;
inline const char *const kWorkload =
    "matmul/4096x4096x4096/bf16,bf16->bf16/ak,bk/sm_90a";

class DatabaseTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kopt-db-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string file(const std::string &name) const {
    return (fs::path(dir) / name).string();
  }
  std::unique_ptr<Database> openOrDie(const std::string &path,
                                      bool readOnly = false) {
    auto db = Database::open(path, readOnly);
    EXPECT_TRUE(db.ok()) << db.error();
    return db.ok() ? db.take() : nullptr;
  }

  std::string dir;
};

inline std::string scheduleText(int blockM, int stages) {
  return canonicalSchedule(
      json{{"block_m", blockM}, {"block_n", 128}, {"stages", stages}});
}

/// A measured, correct GPU trial of kWorkload by kopt 0.1.0.
inline TrialRecord trial(double medianMs, int blockM = 128, int stages = 3) {
  TrialRecord r;
  r.workload = kWorkload;
  r.ops = "matmul";
  r.koptVersion = "0.1.0";
  r.schedule = scheduleText(blockM, stages);
  r.strategy = "grid";
  r.measurer = "gpu";
  r.status = "ok";
  r.registers = 168;
  r.spillBytes = 0;
  r.sharedBytes = 98304;
  r.medianMs = medianMs;
  r.minMs = medianMs * 0.99;
  r.maxMs = medianMs * 1.02;
  r.meanMs = medianMs * 1.001;
  r.stddevMs = medianMs * 0.004;
  r.p10Ms = medianMs * 0.995;
  r.p90Ms = medianMs * 1.01;
  r.runs = 100;
  r.correct = true;
  r.device = "NVIDIA H200";
  r.smClockMHz = 1980;
  r.memClockMHz = 3201;
  r.session = "s1";
  return r;
}

inline bool sameDouble(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

/// The fields in which `a` and `b` differ ("" when none; ids not compared).
inline std::string diff(const TrialRecord &a, const TrialRecord &b) {
  std::string out;
  auto str = [&](const char *name, const std::string &x, const std::string &y) {
    if (x != y)
      out += std::string(name) + ": '" + x + "' vs '" + y + "'; ";
  };
  auto num = [&](const char *name, double x, double y) {
    if (!sameDouble(x, y))
      out += std::string(name) + ": " + std::to_string(x) + " vs " +
             std::to_string(y) + "; ";
  };
  str("workload", a.workload, b.workload);
  str("ops", a.ops, b.ops);
  str("koptVersion", a.koptVersion, b.koptVersion);
  str("schedule", a.schedule, b.schedule);
  str("strategy", a.strategy, b.strategy);
  str("measurer", a.measurer, b.measurer);
  str("status", a.status, b.status);
  str("error", a.error, b.error);
  num("registers", a.registers, b.registers);
  num("spillBytes", a.spillBytes, b.spillBytes);
  num("sharedBytes", a.sharedBytes, b.sharedBytes);
  num("medianMs", a.medianMs, b.medianMs);
  num("minMs", a.minMs, b.minMs);
  num("maxMs", a.maxMs, b.maxMs);
  num("meanMs", a.meanMs, b.meanMs);
  num("stddevMs", a.stddevMs, b.stddevMs);
  num("p10Ms", a.p10Ms, b.p10Ms);
  num("p90Ms", a.p90Ms, b.p90Ms);
  num("runs", a.runs, b.runs);
  num("correct", a.correct, b.correct);
  str("device", a.device, b.device);
  num("smClockMHz", a.smClockMHz, b.smClockMHz);
  num("memClockMHz", a.memClockMHz, b.memClockMHz);
  str("session", a.session, b.session);
  str("time", a.time, b.time);
  return out;
}

inline std::string readBytes(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline int64_t count(Database &db) {
  auto all = db.trials();
  EXPECT_TRUE(all.ok()) << all.error();
  return all.ok() ? static_cast<int64_t>(all->size()) : -1;
}

} // namespace kopt::search::dbtest

#endif // KOPT_TEST_UNIT_DATABASETESTUTIL_H
