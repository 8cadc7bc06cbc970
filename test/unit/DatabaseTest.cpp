//===- DatabaseTest.cpp - the tuning database (lib/Search) ----------------===//
//
// Records in and out, the best-trial query, JSON lines export and import,
// files that are not kopt's (DatabaseProcessTest.cpp: several processes).
//
//===----------------------------------------------------------------------===//

#include "DatabaseTestUtil.h"

#include <sys/stat.h>

using namespace kopt::search::dbtest;

namespace {

//===----------------------------------------------------------------------===//
// Records in and out
//===----------------------------------------------------------------------===//

TEST_F(DatabaseTest, AddTrialsHasRoundTrip) {
  std::string path = file("tune.db");
  TrialRecord added = trial(1.25);
  added.error = "";
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db);
    EXPECT_EQ(db->path(), path);
    EXPECT_EQ(count(*db), 0);
    Status st = db->add(added);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_GT(added.id, 0);
    EXPECT_TRUE(std::regex_match(
        added.time, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
        << added.time;

    // A second one keeps a given time and canonicalizes the schedule.
    TrialRecord second = trial(2.5, 64, 4);
    second.schedule = R"({ "stages": 4, "block_n": 128, "block_m": 64 })";
    second.time = "2026-12-02T13:40:00Z";
    second.registers = -1;
    second.medianMs = NaN;
    second.status = "compile_error";
    second.error = "ptxas: too many resources";
    second.correct = false;
    st = db->add(second);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_GT(second.id, added.id);
    EXPECT_EQ(second.time, "2026-12-02T13:40:00Z");
    EXPECT_EQ(second.schedule, scheduleText(64, 4));

    auto all = db->trials();
    ASSERT_TRUE(all.ok()) << all.error();
    ASSERT_EQ(all->size(), 2u);
    EXPECT_EQ((*all)[0].id, added.id);
    EXPECT_EQ(diff((*all)[0], added), "");
    EXPECT_EQ((*all)[1].id, second.id);
    EXPECT_EQ(diff((*all)[1], second), "");
    EXPECT_EQ((*all)[1].registers, -1);
    EXPECT_TRUE(std::isnan((*all)[1].medianMs));

    auto h = db->has("s1", kWorkload, "matmul", scheduleText(128, 3));
    ASSERT_TRUE(h.ok()) << h.error();
    EXPECT_TRUE(*h);
    // The same schedule written differently is the same schedule.
    h = db->has("s1", kWorkload, "matmul",
                R"({"stages":3,"block_m":128,"block_n":128})");
    ASSERT_TRUE(h.ok());
    EXPECT_TRUE(*h);
    for (auto [session, ops, schedule] :
         {std::tuple<std::string, std::string, std::string>{
              "s2", "matmul", scheduleText(128, 3)},
          {"s1", "matmul+add", scheduleText(128, 3)},
          {"s1", "matmul", scheduleText(128, 5)}}) {
      h = db->has(session, kWorkload, ops, schedule);
      ASSERT_TRUE(h.ok());
      EXPECT_FALSE(*h) << session << " " << ops << " " << schedule;
    }
    h = db->has("s1", "other", "matmul", scheduleText(128, 3));
    ASSERT_TRUE(h.ok());
    EXPECT_FALSE(*h);
  }
  // Reopened, read-only: the rows are there, and writing is refused.
  auto db = openOrDie(path, /*readOnly=*/true);
  ASSERT_TRUE(db);
  auto all = db->trials();
  ASSERT_TRUE(all.ok()) << all.error();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ(diff((*all)[0], added), "");
  TrialRecord more = trial(3);
  Status st = db->add(more);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find(path), std::string::npos) << st.message();
  EXPECT_EQ(more.id, 0);
}

TEST_F(DatabaseTest, AddRejectsANonJSONScheduleAndAddAllIsAllOrNothing) {
  auto db = openOrDie(file("tune.db"));
  ASSERT_TRUE(db);
  std::vector<TrialRecord> batch = {trial(1), trial(2), trial(3)};
  batch[1].schedule = "block_m=128";
  Status st = db->addAll(batch);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("schedule"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("trial 1"), std::string::npos) << st.message();
  EXPECT_EQ(count(*db), 0);
  EXPECT_EQ(batch[0].id, 0);
  EXPECT_EQ(batch[0].time, "");

  batch[1].schedule = scheduleText(64, 2);
  st = db->addAll(batch);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(count(*db), 3);
  EXPECT_LT(batch[0].id, batch[1].id);
  EXPECT_LT(batch[1].id, batch[2].id);
  EXPECT_FALSE(batch[2].time.empty());
}

TEST_F(DatabaseTest, BestTakesTheFastestUsableGPUTrialOfThisVersion) {
  auto db = openOrDie(file("tune.db"));
  ASSERT_TRUE(db);
  auto best0 = db->best(kWorkload, "matmul", "0.1.0");
  ASSERT_TRUE(best0.ok()) << best0.error();
  EXPECT_FALSE(best0->has_value());

  std::vector<TrialRecord> rows;
  rows.push_back(trial(2.0, 128, 3)); // usable
  rows.push_back(trial(1.5, 128, 4)); // usable: the answer
  rows.push_back(trial(3.0, 64, 3));  // usable
  TrialRecord wrong = trial(0.5, 256, 2);
  wrong.status = "wrong";
  wrong.correct = false;
  rows.push_back(wrong);
  TrialRecord okButIncorrect = trial(0.6, 256, 3);
  okButIncorrect.correct = false;
  rows.push_back(okButIncorrect);
  TrialRecord compileError = trial(0.4, 256, 4);
  compileError.status = "compile_error";
  compileError.correct = false;
  rows.push_back(compileError);
  TrialRecord notMeasured = trial(NaN, 256, 5);
  rows.push_back(notMeasured);
  TrialRecord zero = trial(0.0, 256, 6);
  rows.push_back(zero);
  TrialRecord model = trial(0.3, 64, 4);
  model.measurer = "model";
  rows.push_back(model);
  TrialRecord replay = trial(0.35, 64, 5);
  replay.measurer = "replay";
  rows.push_back(replay);
  TrialRecord newer = trial(0.2, 64, 6);
  newer.koptVersion = "0.2.0";
  rows.push_back(newer);
  TrialRecord otherWorkload = trial(0.1, 64, 7);
  otherWorkload.workload = "matmul/16x16x16/bf16,bf16->bf16/ak,bk/sm_90a";
  rows.push_back(otherWorkload);
  TrialRecord fused = trial(1.0, 32, 3);
  fused.ops = "matmul+add+gelu";
  rows.push_back(fused);
  Status st = db->addAll(rows);
  ASSERT_TRUE(st.ok()) << st.message();
  // The copies above have no ids: take them from the rows added.
  model.id = rows[8].id;
  newer.id = rows[10].id;
  fused.id = rows[12].id;
  ASSERT_EQ(rows[12].ops, "matmul+add+gelu");

  auto b = db->best(kWorkload, "matmul", "0.1.0");
  ASSERT_TRUE(b.ok()) << b.error();
  ASSERT_TRUE(b->has_value());
  EXPECT_EQ((*b)->id, rows[1].id);
  EXPECT_EQ(diff(**b, rows[1]), "");
  EXPECT_TRUE((*b)->usable());

  // Any op chain: the fused kernel's trial is faster.
  b = db->best(kWorkload, "", "0.1.0");
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->has_value());
  EXPECT_EQ((*b)->id, fused.id);
  b = db->best(kWorkload, "matmul+add+gelu", "0.1.0");
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->has_value());
  EXPECT_EQ((*b)->id, fused.id);
  // Asking for another measurer or version gives those.
  b = db->best(kWorkload, "matmul", "0.1.0", "model");
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->has_value());
  EXPECT_EQ((*b)->id, model.id);
  b = db->best(kWorkload, "matmul", "0.2.0");
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->has_value());
  EXPECT_EQ((*b)->id, newer.id);
  b = db->best(kWorkload, "matmul", "0.3.0");
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->has_value());
  b = db->best(kWorkload, "softmax", "0.1.0");
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->has_value());

  // usable() agrees with the query.
  EXPECT_FALSE(wrong.usable());
  EXPECT_FALSE(okButIncorrect.usable());
  EXPECT_FALSE(compileError.usable());
  EXPECT_FALSE(notMeasured.usable());
  EXPECT_FALSE(zero.usable());
  EXPECT_TRUE(model.usable());
  TrialRecord inf = trial(INFINITY);
  EXPECT_FALSE(inf.usable());

  // Ties go to the first added.
  TrialRecord tie = trial(1.5, 32, 4);
  st = db->add(tie);
  ASSERT_TRUE(st.ok());
  b = db->best(kWorkload, "matmul", "0.1.0");
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->has_value());
  EXPECT_EQ((*b)->id, rows[1].id);
}

TEST_F(DatabaseTest, CountOtherVersions) {
  auto db = openOrDie(file("tune.db"));
  ASSERT_TRUE(db);
  std::vector<TrialRecord> rows;
  for (const char *v : {"0.1.0", "0.1.0", "0.0.9", "0.0.9", "0.2.0"}) {
    int i = static_cast<int>(rows.size());
    rows.push_back(trial(1.0 + i, 64, 2 + i));
    rows.back().koptVersion = v;
  }
  TrialRecord unusable = trial(NaN, 32, 3);
  unusable.koptVersion = "0.0.9";
  unusable.status = "timeout";
  rows.push_back(unusable);
  TrialRecord elsewhere = trial(1.0, 32, 4);
  elsewhere.koptVersion = "0.0.9";
  elsewhere.workload = "other";
  rows.push_back(elsewhere);
  Status st = db->addAll(rows);
  ASSERT_TRUE(st.ok()) << st.message();
  auto n = db->countOtherVersions(kWorkload, "0.1.0");
  ASSERT_TRUE(n.ok()) << n.error();
  EXPECT_EQ(*n, 3);
  n = db->countOtherVersions(kWorkload, "0.0.9");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 3);
  n = db->countOtherVersions(kWorkload, "9.9.9");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 5);
  n = db->countOtherVersions("nothing", "0.1.0");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);
}

TEST_F(DatabaseTest, TrialsFilterByWorkloadAndSession) {
  auto db = openOrDie(file("tune.db"));
  ASSERT_TRUE(db);
  std::vector<TrialRecord> rows;
  for (int i = 0; i < 8; ++i) {
    rows.push_back(trial(1.0 + i, 64, 2 + i));
    rows.back().workload = i % 2 ? "w-odd" : "w-even";
    rows.back().session = i < 4 ? "a" : "b";
  }
  Status st = db->addAll(rows);
  ASSERT_TRUE(st.ok()) << st.message();
  auto ids = [&](const std::string &w, const std::string &s) {
    std::vector<int64_t> out;
    auto t = db->trials(w, s);
    EXPECT_TRUE(t.ok()) << t.error();
    if (t.ok())
      for (const TrialRecord &r : *t)
        out.push_back(r.id);
    return out;
  };
  auto idsOf = [&](std::initializer_list<int> is) {
    std::vector<int64_t> out;
    for (int i : is)
      out.push_back(rows[i].id);
    return out;
  };
  EXPECT_EQ(ids("", ""), idsOf({0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(ids("w-odd", ""), idsOf({1, 3, 5, 7}));
  EXPECT_EQ(ids("", "b"), idsOf({4, 5, 6, 7}));
  EXPECT_EQ(ids("w-even", "a"), idsOf({0, 2}));
  EXPECT_EQ(ids("w-none", ""), idsOf({}));
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

TEST(TrialJSON, RoundTrip) {
  TrialRecord r = trial(1.125);
  r.id = 42;
  r.error = "some \"quoted\" text";
  r.p90Ms = NaN;
  r.time = "2026-12-02T13:40:00Z";
  r.session = "tune-1";
  r.strategy = "evolutionary";
  json j = toJSON(r);
  for (const char *key :
       {"workload",  "ops",          "kopt_version",  "schedule",
        "strategy",  "measurer",     "status",        "error",
        "registers", "spill_bytes",  "shared_bytes",  "median_ms",
        "min_ms",    "max_ms",       "mean_ms",       "stddev_ms",
        "p10_ms",    "p90_ms",       "runs",          "correct",
        "device",    "sm_clock_mhz", "mem_clock_mhz", "session",
        "time"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j.size(), 25u) << j.dump();
  ASSERT_TRUE(j["schedule"].is_object());
  EXPECT_EQ(j["schedule"]["block_m"], 128);
  EXPECT_TRUE(j["p90_ms"].is_null());
  EXPECT_EQ(j["median_ms"], 1.125);
  EXPECT_EQ(j["kopt_version"], "0.1.0");
  EXPECT_EQ(j["spill_bytes"], 0);
  EXPECT_EQ(j["correct"], true);

  // Through text, as in a JSON lines file.
  json back = json::parse(j.dump());
  auto r2 = recordFromJSON(back);
  ASSERT_TRUE(r2.ok()) << r2.error();
  EXPECT_EQ(diff(*r2, r), "");
  EXPECT_EQ(r2->id, 0);

  // Only the required keys: the rest default.
  json minimal = {{"workload", "w"},
                  {"ops", "matmul"},
                  {"kopt_version", "0.1.0"},
                  {"schedule", {{"stages", 2}, {"block_m", 64}}},
                  {"status", "rejected"}};
  auto r3 = recordFromJSON(minimal);
  ASSERT_TRUE(r3.ok()) << r3.error();
  EXPECT_EQ(r3->schedule, R"({"block_m":64,"stages":2})");
  EXPECT_EQ(r3->registers, -1);
  EXPECT_EQ(r3->smClockMHz, -1);
  EXPECT_TRUE(std::isnan(r3->medianMs));
  EXPECT_EQ(r3->runs, 0);
  EXPECT_FALSE(r3->correct);
  EXPECT_EQ(r3->session, "");
  EXPECT_EQ(
      canonicalSchedule(json::parse(R"({"b": 1, "a": {"d": 2, "c": 3}})")),
      R"({"a":{"c":3,"d":2},"b":1})");
}

TEST(TrialJSON, ErrorsNameTheKey) {
  json good = toJSON(trial(1.0));
  ASSERT_TRUE(recordFromJSON(good).ok());
  for (const char *key :
       {"workload", "ops", "kopt_version", "schedule", "status"}) {
    json j = good;
    j.erase(key);
    auto r = recordFromJSON(j);
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_NE(r.error().find(key), std::string::npos) << r.error();
    EXPECT_NE(r.error().find("missing"), std::string::npos) << r.error();
  }
  std::vector<std::pair<const char *, json>> wrong = {
      {"workload", 5},
      {"ops", nullptr},
      {"kopt_version", json::array()},
      {"schedule", "{\"block_m\":128}"},
      {"status", true},
      {"strategy", 1},
      {"registers", 1.5},
      {"spill_bytes", "0"},
      {"median_ms", "fast"},
      {"p10_ms", json::object()},
      {"runs", "100"},
      {"correct", 1},
      {"device", 0},
      {"sm_clock_mhz", false},
      {"session", json::array({"a"})},
      {"time", 20261202}};
  for (auto &[key, value] : wrong) {
    json j = good;
    j[key] = value;
    auto r = recordFromJSON(j);
    ASSERT_FALSE(r.ok()) << key << " = " << value.dump();
    EXPECT_EQ(r.error().rfind(key, 0), 0u) << r.error();
  }
  // Optional keys may be null or absent.
  json j = good;
  j["registers"] = nullptr;
  j.erase("device");
  auto r = recordFromJSON(j);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->registers, -1);
  EXPECT_EQ(r->device, "");
  EXPECT_FALSE(recordFromJSON(json::array()).ok());
}

//===----------------------------------------------------------------------===//
// Export and import
//===----------------------------------------------------------------------===//

std::vector<TrialRecord> variedTrials() {
  std::vector<TrialRecord> rows;
  rows.push_back(trial(1.0, 128, 3));
  rows.push_back(trial(0.875, 64, 4));
  rows.back().session = "s2";
  rows.push_back(trial(NaN, 256, 2));
  rows.back().status = "compile_error";
  rows.back().error = "ptxas: uses too much shared data";
  rows.back().correct = false;
  rows.back().registers = -1;
  rows.push_back(trial(0.1 + 0.2, 32, 5)); // not a short decimal
  rows.back().measurer = "model";
  rows.back().device = "";
  rows.push_back(trial(2.0, 128, 6));
  rows.back().time = "2026-01-01T00:00:00Z";
  rows.back().ops = "matmul+add+gelu";
  rows.back().error = "naïve ünïcode";
  return rows;
}

TEST_F(DatabaseTest, ExportThenImportGivesTheSameRows) {
  auto db = openOrDie(file("a.db"));
  ASSERT_TRUE(db);
  std::vector<TrialRecord> rows = variedTrials();
  Status st = db->addAll(rows);
  ASSERT_TRUE(st.ok()) << st.message();
  std::ostringstream out;
  auto n = db->exportJSONL(out);
  ASSERT_TRUE(n.ok()) << n.error();
  EXPECT_EQ(*n, 5);
  std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 5);

  auto db2 = openOrDie(file("b.db"));
  ASSERT_TRUE(db2);
  std::istringstream in(text);
  auto added = db2->importJSONL(in, "a.jsonl");
  ASSERT_TRUE(added.ok()) << added.error();
  EXPECT_EQ(*added, 5);
  auto got = db2->trials();
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(got->size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    EXPECT_EQ(diff((*got)[i], rows[i]), "") << i;
  // Exporting the copy gives the same text.
  std::ostringstream out2;
  ASSERT_TRUE(db2->exportJSONL(out2).ok());
  EXPECT_EQ(out2.str(), text);

  // Importing again adds nothing, also into the original.
  std::istringstream again(text);
  added = db2->importJSONL(again, "a.jsonl");
  ASSERT_TRUE(added.ok()) << added.error();
  EXPECT_EQ(*added, 0);
  EXPECT_EQ(count(*db2), 5);
  std::istringstream self(text);
  added = db->importJSONL(self, "a.jsonl");
  ASSERT_TRUE(added.ok()) << added.error();
  EXPECT_EQ(*added, 0);
  EXPECT_EQ(count(*db), 5);

  // A trial that differs only in its session or median is another trial.
  json j = toJSON(rows[0]);
  j["session"] = "other";
  json k = toJSON(rows[0]);
  k["median_ms"] = 1.0625;
  std::istringstream two(j.dump() + "\n\n  \n" + k.dump() + "\n");
  added = db->importJSONL(two, "two.jsonl");
  ASSERT_TRUE(added.ok()) << added.error();
  EXPECT_EQ(*added, 2);
  EXPECT_EQ(count(*db), 7);
}

TEST_F(DatabaseTest, AMalformedLineImportsNothingAndNamesTheLine) {
  auto db = openOrDie(file("tune.db"));
  ASSERT_TRUE(db);
  std::string good1 = toJSON(trial(1.0, 64, 2)).dump();
  std::string good2 = toJSON(trial(2.0, 64, 3)).dump();
  // Line 3 is not JSON.
  {
    std::istringstream in(good1 + "\n" + good2 + "\n{\"workload\": \n" + good1 +
                          "\n");
    auto added = db->importJSONL(in, "runs/a.jsonl");
    ASSERT_FALSE(added.ok());
    EXPECT_EQ(added.error().rfind("runs/a.jsonl:3: ", 0), 0u) << added.error();
    EXPECT_EQ(count(*db), 0);
  }
  // Line 4 (after a blank line 2) lacks kopt_version.
  {
    json bad = toJSON(trial(3.0, 64, 4));
    bad.erase("kopt_version");
    std::istringstream in(good1 + "\n\n" + good2 + "\n" + bad.dump() + "\n");
    auto added = db->importJSONL(in, "b.jsonl");
    ASSERT_FALSE(added.ok());
    EXPECT_EQ(added.error().rfind("b.jsonl:4: ", 0), 0u) << added.error();
    EXPECT_NE(added.error().find("kopt_version"), std::string::npos)
        << added.error();
    EXPECT_EQ(count(*db), 0);
  }
  // A line that is JSON but not an object, and a key given twice.
  {
    std::istringstream in(good1 + "\n[1, 2]\n");
    auto added = db->importJSONL(in, "c.jsonl");
    ASSERT_FALSE(added.ok());
    EXPECT_EQ(added.error().rfind("c.jsonl:2: ", 0), 0u) << added.error();
    std::istringstream twice(R"({"workload": "a", "workload": "b"})");
    added = db->importJSONL(twice, "d.jsonl");
    ASSERT_FALSE(added.ok());
    EXPECT_EQ(added.error().rfind("d.jsonl:1: ", 0), 0u) << added.error();
    EXPECT_EQ(count(*db), 0);
  }
  // The good lines alone import.
  std::istringstream in(good1 + "\r\n" + good2 + "\r\n");
  auto added = db->importJSONL(in, "e.jsonl");
  ASSERT_TRUE(added.ok()) << added.error();
  EXPECT_EQ(*added, 2);
}

//===----------------------------------------------------------------------===//
// Files that are not kopt tuning databases
//===----------------------------------------------------------------------===//

TEST_F(DatabaseTest, AGarbageFileIsAnErrorAndLeftAlone) {
  std::string path = file("garbage.db");
  std::string bytes(8192, '\0');
  std::mt19937 rng(17);
  for (char &c : bytes)
    c = static_cast<char>(rng());
  {
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), bytes.size());
  }
  for (bool readOnly : {false, true}) {
    auto db = Database::open(path, readOnly);
    ASSERT_FALSE(db.ok()) << readOnly;
    EXPECT_NE(db.error().find(path), std::string::npos) << db.error();
    EXPECT_NE(db.error().find("not a kopt tuning database"), std::string::npos)
        << db.error();
    EXPECT_EQ(readBytes(path), bytes);
    EXPECT_FALSE(fs::exists(path + "-wal"));
    EXPECT_FALSE(fs::exists(path + "-shm"));
    EXPECT_FALSE(fs::exists(path + "-journal"));
  }
}

TEST_F(DatabaseTest, AnotherSQLiteDatabaseIsAnError) {
  std::string path = file("other.db");
  {
    sqlite3 *raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw,
                           "CREATE TABLE accounts(name TEXT, balance REAL);"
                           "INSERT INTO accounts VALUES('a', 1.0);",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  std::string before = readBytes(path);
  for (bool readOnly : {false, true}) {
    auto db = Database::open(path, readOnly);
    ASSERT_FALSE(db.ok());
    EXPECT_NE(db.error().find(path), std::string::npos) << db.error();
    EXPECT_NE(db.error().find("not a kopt tuning database"), std::string::npos)
        << db.error();
    EXPECT_NE(db.error().find("accounts"), std::string::npos) << db.error();
    EXPECT_EQ(readBytes(path), before);
  }
}

/// An SQLite file made by `sql`, opened by kopt (read-write and read-only):
/// refused, the error containing `needle`, and the file byte for byte as it
/// was, in its own journal mode.
void expectRefusedUntouched(const std::string &path, const char *sql,
                            const char *needle) {
  {
    sqlite3 *raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, sql, nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(raw);
    sqlite3_close(raw);
  }
  std::string before = readBytes(path);
  for (bool readOnly : {false, true}) {
    auto db = Database::open(path, readOnly);
    ASSERT_FALSE(db.ok()) << sql;
    EXPECT_NE(db.error().find("not a kopt tuning database"), std::string::npos)
        << db.error();
    EXPECT_NE(db.error().find(needle), std::string::npos) << db.error();
    EXPECT_EQ(readBytes(path), before) << sql; // no WAL switch, no schema
    EXPECT_FALSE(fs::exists(path + "-wal")) << sql;
  }
}

TEST_F(DatabaseTest, AnotherProgramsMetaTableIsLeftAlone) {
  // Found by a break test: the WAL switch ran before the schema check.
  expectRefusedUntouched(file("meta.db"),
                         "CREATE TABLE meta(key, value); INSERT INTO meta "
                         "VALUES('owner', 'someone');",
                         "schema_version");
}

TEST_F(DatabaseTest, ASchemaWithoutTablesOrAMarkedHeaderIsAnotherPrograms) {
  expectRefusedUntouched(file("view.db"), "CREATE VIEW v AS SELECT 1 AS one;",
                         "other schema objects");
  expectRefusedUntouched(file("app.db"), "PRAGMA application_id = 1234;",
                         "application_id 1234");
  expectRefusedUntouched(file("user.db"), "PRAGMA user_version = 7;",
                         "user_version 7");
}

TEST_F(DatabaseTest, AFifoIsRefusedWithoutBlocking) {
  std::string path = file("pipe.db");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  for (bool readOnly : {false, true}) {
    auto db = Database::open(path, readOnly);
    ASSERT_FALSE(db.ok());
    EXPECT_NE(db.error().find("not a regular file"), std::string::npos)
        << db.error();
  }
}

TEST_F(DatabaseTest, ANewerSchemaIsAnError) {
  std::string path = file("tune.db");
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db);
    TrialRecord r = trial(1);
    ASSERT_TRUE(db->add(r).ok());
  }
  {
    sqlite3 *raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw,
                           "UPDATE meta SET value = '2' WHERE key = "
                           "'schema_version'",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  auto db = Database::open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().find(path), std::string::npos) << db.error();
  EXPECT_NE(db.error().find("schema version 2"), std::string::npos)
      << db.error();
  EXPECT_NE(db.error().find("newer"), std::string::npos) << db.error();
  // Version 1 again: fine, and the row is still there.
  {
    sqlite3 *raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw,
                           "UPDATE meta SET value = '1' WHERE key = "
                           "'schema_version'",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  auto again = openOrDie(path);
  ASSERT_TRUE(again);
  EXPECT_EQ(count(*again), 1);
}

TEST_F(DatabaseTest, ReadOnlyOnAMissingFileFails) {
  std::string path = file("missing.db");
  auto db = Database::open(path, /*readOnly=*/true);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().find(path), std::string::npos) << db.error();
  EXPECT_FALSE(fs::exists(path));
  // So does a folder that is not there, read-write.
  std::string nested = file("no/such/dir/tune.db");
  auto db2 = Database::open(nested);
  ASSERT_FALSE(db2.ok());
  EXPECT_NE(db2.error().find(nested), std::string::npos) << db2.error();
}

} // namespace
