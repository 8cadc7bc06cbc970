//===- Tuner.h - The tuning loop: budget, batches, task scheduler -*- C++ -*-===//
//
// Tunes the tasks of a module: each task has an Agent of the chosen strategy;
// the tuner repeatedly picks a task, asks its agent for a batch, builds the
// batch (in parallel, when the measurer needs builds), drops what the builder
// rejected, measures the rest one at a time, records every trial in the
// tuning database and tells the agent.
//
// The task scheduler (after Ansor's, Zheng et al., OSDI 2020, section 6):
// every task first gets one batch, whose first point is the heuristic's
// schedule (the table's "heuristic" time); then each batch goes to the task
// with the largest expected gain in the module's total time,
//   launches x best_ms x rate,
// where rate is the relative improvement of the task's best over its last
// batch per trial, but at least 1 / (2 x trials) (an optimistic prior that
// decays, so that no task starves); a task with no usable trial yet scores
// as if it were the slowest task. Tasks whose agent proposes nothing more,
// or that hit the per-kernel budget, are done.
//
// Resuming: trials of the session already in the database are the history;
// the budget counts them, and no schedule is tried twice in a session.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_SEARCH_TUNER_H
#define KOPT_SEARCH_TUNER_H

#include "kopt/Search/Agent.h"
#include "kopt/Search/Database.h"
#include "kopt/Search/Measurer.h"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kopt::search {

/// Compiles candidates (kopt-tune's: the C API, then ptxas for resources).
class Builder {
public:
  virtual ~Builder() = default;
  /// Compiles every candidate of `batch` for `task`, setting manifestPath,
  /// or record.status "compile_error" (with a short record.error) or
  /// "rejected" (spills or shared memory over the limit per ptxas: no GPU
  /// time is spent on it), and record.registers / spillBytes / sharedBytes
  /// when known.
  virtual void build(const Task &task, std::vector<Candidate *> &batch) = 0;
};

struct TunerOptions {
  std::string strategy = "evolutionary";
  /// Trials in all, over every task (the resumed ones included).
  int64_t budget = 64;
  /// At most this many trials per task (0: no limit but `budget`).
  int64_t budgetPerTask = 0;
  uint64_t seed = 0;
  /// Candidates per batch (built together, then measured one by one).
  int64_t batchSize = 16;
  /// The session the trials are recorded under (--resume continues it).
  std::string session;
  /// Recorded with every trial.
  std::string koptVersion;
  /// When set, no batch starts after this moment (kopt-tune --time-limit):
  /// the batch in flight finishes and is recorded.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  /// Makes task i's agent instead of makeAgent(strategy, seed) when set
  /// (the external agent: ExternalAgentHost::agentFor).
  std::function<std::unique_ptr<Agent>(size_t task, uint64_t seed)> agentFor;
};

/// A task's outcome.
struct TaskResult {
  const Task *task = nullptr;
  int64_t trials = 0;
  /// Trials by status ("ok", "rejected", "compile_error", ...).
  std::map<std::string, int64_t> statuses;
  std::optional<TrialRecord> best;
  /// The heuristic schedule's trial, when it was measured.
  std::optional<TrialRecord> heuristic;
};

class Tuner {
public:
  /// `builder` may be null when the measurer needs no builds; `db` may be
  /// null (nothing recorded, no resume).
  Tuner(std::vector<Task> &tasks, Measurer &measurer, Builder *builder,
        Database *db, TunerOptions options);
  ~Tuner();

  /// Makes the agents and loads the session's trials from the database.
  /// Returns the number of trials resumed.
  Expected<int64_t> prepare();

  /// Called after each trial is recorded: the task, the trial, the number of
  /// trials so far (all tasks) and the task's best usable trial.
  using TrialFn = std::function<void(const Task &, const Trial &, int64_t done,
                                     const TrialRecord *best)>;
  /// Runs until the budget is spent or every task is done. Errors of the
  /// measurer or the database stop it (what was recorded stays).
  Status run(const TrialFn &onTrial = {});

  std::vector<TaskResult> results() const;

private:
  struct State;
  std::vector<Task> &tasks;
  Measurer &measurer;
  Builder *builder;
  Database *db;
  TunerOptions options;
  std::vector<std::unique_ptr<State>> states;
  int64_t done = 0;

  /// The task the next batch goes to, or -1 when none can take one.
  int64_t chooseTask() const;
};

} // namespace kopt::search

#endif // KOPT_SEARCH_TUNER_H
