//===- Tuner.cpp - The tuning loop and the task scheduler -----------------===//
//
// See include/kopt/Search/Tuner.h.
//
//===----------------------------------------------------------------------===//

#include "kopt/Search/Tuner.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kopt::search {

struct Tuner::State {
  std::unique_ptr<Agent> agent;
  std::vector<Trial> history;
  /// Best usable median after each batch (for the improvement rate).
  std::vector<double> bestAfterBatch;
  bool exhausted = false;

  const Trial *best() const {
    const Trial *b = nullptr;
    for (const Trial &t : history)
      if (t.record.usable() && (!b || t.record.medianMs < b->record.medianMs))
        b = &t;
    return b;
  }
};

Tuner::Tuner(std::vector<Task> &tasks, Measurer &measurer, Builder *builder,
             Database *db, TunerOptions options)
    : tasks(tasks), measurer(measurer), builder(builder), db(db),
      options(std::move(options)) {}

Tuner::~Tuner() = default;

Expected<int64_t> Tuner::prepare() {
  states.clear();
  done = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    // Each task's agent gets its own seed, derived from the run's.
    uint64_t seed = options.seed * 0x9E3779B97F4A7C15ull + i + 1;
    auto state = std::make_unique<State>();
    if (options.agentFor) {
      state->agent = options.agentFor(i, seed);
    } else {
      Expected<std::unique_ptr<Agent>> agent =
          makeAgent(options.strategy, seed);
      if (!agent.ok())
        return agent.status();
      state->agent = std::move(*agent);
    }
    states.push_back(std::move(state));
  }
  if (!db || options.session.empty())
    return int64_t(0);
  Expected<std::vector<TrialRecord>> old = db->trials("", options.session);
  if (!old.ok())
    return old.status();
  int64_t resumed = 0;
  for (TrialRecord &r : *old) {
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (r.workload != tasks[i].workloadKey || r.ops != tasks[i].ops)
        continue;
      int64_t p = tasks[i].indexOf(r.schedule);
      if (p < 0)
        continue;
      states[i]->history.push_back({p, r});
      ++resumed;
      break;
    }
  }
  for (auto &s : states)
    if (const Trial *b = s->best())
      s->bestAfterBatch.push_back(b->record.medianMs);
  done = resumed;
  return resumed;
}

int64_t Tuner::chooseTask() const {
  auto open = [&](size_t i) {
    const State &s = *states[i];
    if (s.exhausted || tasks[i].space.empty())
      return false;
    return options.budgetPerTask <= 0 ||
           int64_t(s.history.size()) < options.budgetPerTask;
  };
  // Every task's first batch, in order.
  for (size_t i = 0; i < tasks.size(); ++i)
    if (open(i) && states[i]->history.empty())
      return int64_t(i);
  double slowest = 0;
  for (size_t i = 0; i < tasks.size(); ++i)
    if (const Trial *b = states[i]->best())
      slowest = std::max(slowest, double(tasks[i].launches) * b->record.medianMs);
  int64_t chosen = -1;
  double bestScore = -1;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!open(i))
      continue;
    const State &s = *states[i];
    double trials = double(s.history.size());
    double rate = 1.0 / (2.0 * trials);
    const std::vector<double> &b = s.bestAfterBatch;
    if (b.size() >= 2 && b[b.size() - 2] > 0) {
      double window = double(options.batchSize);
      rate = std::max(rate, (b[b.size() - 2] - b.back()) / b[b.size() - 2] /
                                window);
    }
    const Trial *best = s.best();
    double time = best ? double(tasks[i].launches) * best->record.medianMs
                       : (slowest > 0 ? slowest : 1.0);
    double score = time * rate;
    if (score > bestScore) {
      bestScore = score;
      chosen = int64_t(i);
    }
  }
  return chosen;
}

Status Tuner::run(const TrialFn &onTrial) {
  if (states.size() != tasks.size())
    if (Expected<int64_t> r = prepare(); !r.ok())
      return r.status();
  while (done < options.budget) {
    if (options.deadline && std::chrono::steady_clock::now() >= *options.deadline)
      break;
    int64_t ti = chooseTask();
    if (ti < 0)
      break;
    Task &task = tasks[ti];
    State &state = *states[ti];
    int64_t room = std::min<int64_t>(options.batchSize, options.budget - done);
    if (options.budgetPerTask > 0)
      room = std::min<int64_t>(room, options.budgetPerTask -
                                         int64_t(state.history.size()));
    // A task's first batch starts with the heuristic's schedule: the
    // baseline of the final table, whatever the strategy (which is asked for
    // one point fewer, so that none of its proposals is dropped).
    int64_t heuristic =
        state.history.empty() ? task.indexOf(task.heuristic) : int64_t(-1);
    size_t asked = size_t(room) - (heuristic >= 0 ? 1 : 0);
    std::vector<int64_t> points;
    if (asked > 0 || heuristic < 0)
      points = state.agent->propose(task, state.history, asked);
    if (heuristic >= 0 &&
        std::find(points.begin(), points.end(), heuristic) == points.end())
      points.insert(points.begin(), heuristic);
    // Only new points of the space, each once.
    std::vector<Candidate> batch;
    for (int64_t p : points) {
      if (p < 0 || p >= int64_t(task.space.size()))
        continue;
      bool seen = std::any_of(state.history.begin(), state.history.end(),
                              [&](const Trial &t) { return t.point == p; }) ||
                  std::any_of(batch.begin(), batch.end(),
                              [&](const Candidate &c) { return c.point == p; });
      if (seen)
        continue;
      Candidate c;
      c.point = p;
      c.schedule = task.space[p];
      c.text = scheduleText(c.schedule);
      batch.push_back(std::move(c));
      if (int64_t(batch.size()) >= room)
        break;
    }
    if (batch.empty()) {
      state.exhausted = true;
      continue;
    }
    std::vector<Candidate *> todo;
    for (Candidate &c : batch)
      todo.push_back(&c);
    if (measurer.needsBuild()) {
      if (!builder)
        return Status::error("the " + measurer.name() +
                             " measurer needs a builder");
      builder->build(task, todo);
    }
    if (Status s = measurer.measure(task, todo); !s.ok())
      return s;
    std::vector<TrialRecord> records;
    for (Candidate &c : batch) {
      TrialRecord &r = c.record;
      r.workload = task.workloadKey;
      r.ops = task.ops;
      r.koptVersion = options.koptVersion;
      r.schedule = c.text;
      r.strategy = state.agent->name();
      r.measurer = measurer.name();
      r.session = options.session;
      if (r.status.empty()) {
        r.status = "run_error";
        r.error = "the measurer gave no result";
      }
      records.push_back(r);
    }
    if (db)
      if (Status s = db->addAll(records); !s.ok())
        return s.withContext("tuning database");
    std::vector<Trial> results;
    for (size_t i = 0; i < batch.size(); ++i) {
      Trial t{batch[i].point, records[i]};
      state.history.push_back(t);
      results.push_back(t);
      ++done;
      if (onTrial) {
        const Trial *b = state.best();
        onTrial(task, t, done, b ? &b->record : nullptr);
      }
    }
    if (const Trial *b = state.best())
      state.bestAfterBatch.push_back(b->record.medianMs);
    state.agent->observe(task, results);
  }
  return Status::success();
}

std::vector<TaskResult> Tuner::results() const {
  std::vector<TaskResult> out;
  for (size_t i = 0; i < tasks.size() && i < states.size(); ++i) {
    TaskResult r;
    r.task = &tasks[i];
    const State &s = *states[i];
    r.trials = int64_t(s.history.size());
    std::string heuristic = scheduleText(tasks[i].heuristic);
    for (const Trial &t : s.history) {
      ++r.statuses[t.record.status];
      if (t.record.schedule == heuristic)
        r.heuristic = t.record;
    }
    if (const Trial *b = s.best())
      r.best = b->record;
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace kopt::search
