//===- SearchTest.cpp - Strategies, measurers and the tuning loop ---------===//
//
// lib/Search without a GPU: the strategies walk real schedule spaces, the
// model measurer plays the GPU, the replay measurer reads tables written
// here, and the tuner records in a database in a temporary folder.
//
//===----------------------------------------------------------------------===//

#include "SearchTestUtil.h"
#include "kopt/Search/Agent.h"
#include "kopt/Search/Measurer.h"
#include "kopt/Search/Report.h"
#include "kopt/Search/Tuner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace kopt::search;
namespace sched = kopt::schedule;
namespace fs = std::filesystem;
using kopt::search::test::makeTask;

namespace {

fs::path tempDir() {
  fs::path d =
      fs::temp_directory_path() /
      ("kopt-search-test-" + std::to_string(::getpid()) + "-" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

/// The best model time over the whole space.
double spaceBest(const Task &t) {
  double best = 1e30;
  for (const sched::MatmulSchedule &s : t.space)
    best = std::min(best, estimateMs(t, s));
  return best;
}

/// The best time `strategy` finds within `budget` trials under the model.
double tuneBest(Task &task, const std::string &strategy, int64_t budget,
                uint64_t seed) {
  std::unique_ptr<Measurer> model = makeModelMeasurer();
  std::vector<Task> tasks = {task};
  TunerOptions o;
  o.strategy = strategy;
  o.budget = budget;
  o.seed = seed;
  o.batchSize = 8;
  Tuner tuner(tasks, *model, nullptr, nullptr, o);
  EXPECT_TRUE(tuner.run().ok());
  std::vector<TaskResult> r = tuner.results();
  EXPECT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].best.has_value());
  return r[0].best ? r[0].best->medianMs : 1e30;
}

} // namespace

TEST(Space, SortedUniqueAndHeuristicInside) {
  Task t = makeTask(4096, 4096, 4096, sched::DType::BF16);
  ASSERT_GT(t.space.size(), 100u);
  for (size_t i = 1; i < t.space.size(); ++i)
    ASSERT_LT(paramsOf(t.space[i - 1]), paramsOf(t.space[i]));
  EXPECT_GE(t.indexOf(scheduleText(t.heuristic)), 0);
  EXPECT_EQ(t.indexOf(scheduleText(t.heuristic)), t.indexOf(t.heuristic));
  EXPECT_EQ(t.indexOf("{\"not\":\"a schedule\"}"), -1);
  for (const sched::MatmulSchedule &s : t.space)
    ASSERT_FALSE(sched::validate(s, t.workload, t.target));
}

TEST(Agents, UnknownStrategyListsTheKnownOnes) {
  Expected<std::unique_ptr<Agent>> a = makeAgent("annealing", 1);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().find("annealing"), std::string::npos);
  EXPECT_NE(a.error().find("evolutionary"), std::string::npos);
}

TEST(Agents, ProposeOnlyNewPointsOfTheSpace) {
  Task t = makeTask(2048, 1024, 512, sched::DType::F16);
  for (const std::string &name : strategyNames()) {
    if (name == "external") {
      // A program: makeAgent refuses it and says how to give one.
      Expected<std::unique_ptr<Agent>> a = makeAgent(name, 7);
      ASSERT_FALSE(a.ok());
      EXPECT_NE(a.error().find("--agent-cmd"), std::string::npos) << a.error();
      continue;
    }
    Expected<std::unique_ptr<Agent>> a = makeAgent(name, 7);
    ASSERT_TRUE(a.ok()) << name;
    std::vector<Trial> history;
    std::set<int64_t> seen;
    for (int round = 0; round < 6; ++round) {
      std::vector<int64_t> batch = (*a)->propose(t, history, 10);
      EXPECT_LE(batch.size(), 10u) << name;
      for (int64_t p : batch) {
        ASSERT_GE(p, 0) << name;
        ASSERT_LT(p, int64_t(t.space.size())) << name;
        EXPECT_TRUE(seen.insert(p).second)
            << name << " proposed " << p << " twice";
        Trial tr;
        tr.point = p;
        tr.record.status = "ok";
        tr.record.correct = true;
        tr.record.medianMs = estimateMs(t, t.space[p]);
        history.push_back(tr);
      }
    }
    if (name == "heuristic") {
      ASSERT_EQ(seen.size(), 1u);
      EXPECT_EQ(*seen.begin(), t.indexOf(scheduleText(t.heuristic)));
    } else {
      EXPECT_EQ(seen.size(), 60u) << name;
    }
  }
}

TEST(Agents, GridCoversTheSpaceOnceSpreadEvenly) {
  Task t = makeTask(512, 512, 512, sched::DType::BF16);
  Expected<std::unique_ptr<Agent>> a = makeAgent("grid", 0);
  ASSERT_TRUE(a.ok());
  std::vector<Trial> history;
  std::vector<int64_t> all;
  for (;;) {
    std::vector<int64_t> b = (*a)->propose(t, history, 256);
    if (b.empty())
      break;
    for (int64_t p : b) {
      all.push_back(p);
      history.push_back({p, {}});
    }
  }
  EXPECT_EQ(all.size(), t.space.size());
  EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), t.space.size());
  // The first eight points are at least an eighth of the space apart (less
  // one for rounding): an even spread, not a run of neighbours.
  int64_t size = int64_t(t.space.size());
  for (size_t i = 0; i < 8; ++i)
    for (size_t j = 0; j < i; ++j)
      EXPECT_GE(std::llabs(all[i] - all[j]), size / 8 - 1) << i << ", " << j;
}

TEST(Tuner, BudgetHeuristicFirstAndBestNoWorse) {
  Task t = makeTask(4096, 4096, 4096, sched::DType::BF16);
  std::vector<Task> tasks = {t};
  std::unique_ptr<Measurer> model = makeModelMeasurer();
  TunerOptions o;
  o.strategy = "random";
  o.budget = 20;
  o.batchSize = 8;
  std::vector<std::string> order;
  Tuner tuner(tasks, *model, nullptr, nullptr, o);
  ASSERT_TRUE(tuner
                  .run([&](const Task &, const Trial &tr, int64_t,
                           const TrialRecord *) {
                    order.push_back(tr.record.schedule);
                  })
                  .ok());
  ASSERT_EQ(order.size(), 20u);
  EXPECT_EQ(order.front(), scheduleText(t.heuristic));
  std::vector<TaskResult> r = tuner.results();
  ASSERT_TRUE(r[0].heuristic && r[0].best);
  EXPECT_LE(r[0].best->medianMs, r[0].heuristic->medianMs);
  EXPECT_EQ(r[0].best->measurer, "model");
}

TEST(Tuner, ResumeContinuesWithoutRepeating) {
  fs::path dir = tempDir();
  Expected<std::unique_ptr<Database>> db =
      Database::open((dir / "tune.db").string());
  ASSERT_TRUE(db.ok()) << db.error();
  Task t = makeTask(1024, 1024, 1024, sched::DType::BF16);
  std::unique_ptr<Measurer> model = makeModelMeasurer();
  TunerOptions o;
  o.strategy = "evolutionary";
  o.budget = 24;
  o.batchSize = 8;
  o.session = "s1";
  o.koptVersion = "test";
  {
    std::vector<Task> tasks = {t};
    Tuner tuner(tasks, *model, nullptr, db->get(), o);
    ASSERT_TRUE(tuner.run().ok());
  }
  o.budget = 40;
  std::vector<Task> tasks = {t};
  Tuner again(tasks, *model, nullptr, db->get(), o);
  Expected<int64_t> resumed = again.prepare();
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ(*resumed, 24);
  ASSERT_TRUE(again.run().ok());
  Expected<std::vector<TrialRecord>> all = (*db)->trials("", "s1");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 40u);
  std::set<std::string> schedules;
  for (const TrialRecord &r : *all)
    EXPECT_TRUE(schedules.insert(r.schedule).second)
        << "repeated " << r.schedule;
  // Model records never become a compile's choice.
  Expected<std::optional<TrialRecord>> best =
      (*db)->best(t.workloadKey, "", "test");
  ASSERT_TRUE(best.ok());
  EXPECT_FALSE(best->has_value());
  Expected<std::optional<TrialRecord>> bestModel =
      (*db)->best(t.workloadKey, "", "test", "model");
  ASSERT_TRUE(bestModel.ok());
  EXPECT_TRUE(bestModel->has_value());
  fs::remove_all(dir);
}

TEST(Tuner, SeveralTasksShareTheBudget) {
  std::vector<Task> tasks = {makeTask(4096, 4096, 4096, sched::DType::BF16),
                             makeTask(16, 4096, 4096, sched::DType::BF16)};
  tasks[1].kernel = "matmul_1";
  std::unique_ptr<Measurer> model = makeModelMeasurer();
  TunerOptions o;
  o.strategy = "random";
  o.budget = 48;
  o.batchSize = 8;
  Tuner tuner(tasks, *model, nullptr, nullptr, o);
  ASSERT_TRUE(tuner.run().ok());
  std::vector<TaskResult> r = tuner.results();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].trials + r[1].trials, 48);
  EXPECT_GE(r[0].trials, 8);
  EXPECT_GE(r[1].trials, 8);
}

TEST(Strategies, EvolutionaryBeatsRandomOnTheModel) {
  // Mean best time over 10 seeds at 64 trials, on the model's landscape.
  struct Shape {
    int64_t m, n, k;
    sched::DType dt;
  };
  for (Shape s : {Shape{4096, 4096, 4096, sched::DType::BF16},
                  Shape{16, 14336, 4096, sched::DType::BF16},
                  Shape{2048, 4096, 14336, sched::DType::BF16}}) {
    Task t = makeTask(s.m, s.n, s.k, s.dt);
    double best = spaceBest(t);
    double evo = 0, rnd = 0;
    for (uint64_t seed = 0; seed < 10; ++seed) {
      evo += tuneBest(t, "evolutionary", 64, seed) / best;
      rnd += tuneBest(t, "random", 64, seed) / best;
    }
    EXPECT_LE(evo, rnd) << t.workloadKey << ": evolutionary " << evo / 10
                        << " x best, random " << rnd / 10 << " x best";
  }
}

TEST(Replay, TableRestrictsTheSpaceAndGivesItsTimes) {
  fs::path dir = tempDir();
  Task t = makeTask(256, 256, 256, sched::DType::BF16);
  fs::path table = dir / "table.jsonl";
  {
    std::ofstream out(table);
    for (size_t i = 0; i < 30; ++i) {
      TrialRecord r;
      r.workload = t.workloadKey;
      r.ops = "matmul";
      r.koptVersion = "test";
      r.schedule = scheduleText(t.space[i * 7]);
      r.status = "ok";
      r.correct = true;
      r.measurer = "gpu";
      r.medianMs = 1.0 + double(i);
      out << toJSON(r).dump() << "\n";
    }
  }
  Expected<std::unique_ptr<Measurer>> replay =
      makeReplayMeasurer(table.string());
  ASSERT_TRUE(replay.ok()) << replay.error();
  std::optional<std::vector<std::string>> only = (*replay)->points(t);
  ASSERT_TRUE(only.has_value());
  fillSpace(t, &*only);
  EXPECT_EQ(t.space.size(), 30u);
  std::vector<Task> tasks = {t};
  TunerOptions o;
  o.strategy = "grid";
  o.budget = 100;
  Tuner tuner(tasks, **replay, nullptr, nullptr, o);
  ASSERT_TRUE(tuner.run().ok());
  std::vector<TaskResult> r = tuner.results();
  EXPECT_EQ(r[0].trials, 30); // the whole table, then the grid is done
  ASSERT_TRUE(r[0].best);
  EXPECT_DOUBLE_EQ(r[0].best->medianMs, 1.0);
  fs::remove_all(dir);
}

TEST(Replay, MalformedLineNamesFileAndLine) {
  fs::path dir = tempDir();
  fs::path table = dir / "bad.jsonl";
  {
    std::ofstream out(table);
    out << "\n{\"workload\": \"w\"}\n";
  }
  Expected<std::unique_ptr<Measurer>> r = makeReplayMeasurer(table.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("bad.jsonl:2"), std::string::npos) << r.error();
  Expected<std::unique_ptr<Measurer>> missing =
      makeReplayMeasurer((dir / "none.jsonl").string());
  EXPECT_FALSE(missing.ok());
  fs::remove_all(dir);
}

TEST(Task, FromWorkloadKey) {
  for (const char *key : {"matmul/4097x4095x4093/bf16,bf16->bf16/ak,bk/sm_90a",
                          "matmul/512x1024x256/f32,f32->f32+tf32/ak,bn/sm_90a",
                          "matmul/1x14336x4096/f16,f16->f32/am,bk/sm_80"}) {
    Expected<Task> t = taskFromWorkloadKey(key, "matmul+add");
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->workloadKey, key);
    EXPECT_EQ(t->ops, "matmul+add");
    EXPECT_EQ(t->flops, 2 * t->workload.m * t->workload.n * t->workload.k);
    EXPECT_FALSE(sched::validate(t->heuristic, t->workload, t->target));
  }
  Expected<Task> tf32 = taskFromWorkloadKey(
      "matmul/512x1024x256/f32,f32->f32+tf32/ak,bn/sm_90a", "matmul");
  EXPECT_TRUE(tf32->workload.tf32);
  EXPECT_FALSE(tf32->workload.bKContiguous);
  for (const char *bad : {"", "conv/1x1x1/f32,f32->f32/ak,bk/sm_90a",
                          "matmul/1x1/f32,f32->f32/ak,bk/sm_90a",
                          "matmul/0x1x1/f32,f32->f32/ak,bk/sm_90a",
                          "matmul/1x1x1/f64,f32->f32/ak,bk/sm_90a",
                          "matmul/1x1x1/f32,f32->f32/ax,bk/sm_90a",
                          "matmul/1x1x1/f32,f32->f32/ak,bk/sm_70",
                          "matmul/01x1x1/f32,f32->f32/ak,bk/sm_90a",
                          "matmul/1x1x1/f32,f32->f32/ak,bk/sm_90a/extra"}) {
    Expected<Task> t = taskFromWorkloadKey(bad, "matmul");
    EXPECT_FALSE(t.ok()) << bad;
    if (!t.ok()) {
      EXPECT_NE(t.error().find("workload key"), std::string::npos) << t.error();
    }
  }
}

TEST(Report, ReplayCurvesReachTheTableBest) {
  fs::path dir = tempDir();
  Task t = makeTask(512, 512, 512, sched::DType::BF16);
  fs::path table = dir / "table.jsonl";
  {
    std::ofstream out(table);
    // 200 points with the model's times (the heuristic among them).
    std::vector<sched::MatmulSchedule> points = {t.heuristic};
    for (size_t i = 0; points.size() < 200; ++i)
      points.push_back(t.space[(i * 7919) % t.space.size()]);
    for (const sched::MatmulSchedule &s : points) {
      TrialRecord r;
      r.workload = t.workloadKey;
      r.ops = "matmul";
      r.koptVersion = "test";
      r.schedule = scheduleText(s);
      r.status = "ok";
      r.correct = true;
      r.measurer = "model";
      r.medianMs = estimateMs(t, s);
      out << toJSON(r).dump() << "\n";
    }
  }
  ReportOptions o;
  o.seeds = 3;
  o.budget = 250; // more than the table: every strategy ends at its best
  Expected<std::vector<Curve>> curves = replayCurves({table.string()}, o);
  ASSERT_TRUE(curves.ok()) << curves.error();
  ASSERT_EQ(curves->size(), 3u);
  for (const Curve &c : *curves) {
    EXPECT_EQ(c.ratios.size(), 3u);
    EXPECT_LE(c.points, 200);
    for (const std::vector<double> &run : c.ratios) {
      ASSERT_EQ(run.size(), 250u);
      EXPECT_DOUBLE_EQ(run.back(), 1.0) << c.strategy;
      for (size_t i = 1; i < run.size(); ++i)
        EXPECT_LE(run[i], run[i - 1]);
    }
  }
  nlohmann::json s = summaryJSON(*curves);
  EXPECT_EQ(s["random"]["problems"], 1);
  EXPECT_EQ(s["grid"]["problems_within_3pct_at_64"].is_number(), true);
  std::ostringstream csv;
  writeCSV(*curves, csv);
  std::string text = csv.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1 + 3 * 250);
  fs::remove_all(dir);
}
