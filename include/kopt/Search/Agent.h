//===- Agent.h - Search strategies behind one interface ---------*- C++ -*-===//
//
// An Agent proposes schedules for a task from the history of its trials and
// observes the results (TVM MetaSchedule's SearchStrategy, Ansor's
// SearchPolicy). Every schedule it proposes is a point of task.space, so it
// is valid by construction; the tuner measures each at most once.
//
// Built-in strategies (makeAgent):
//   heuristic     the default heuristic's schedule only (no search).
//   grid          the space's points in a fixed spread order: index i of the
//                 sorted space in bit-reversed order, so that any prefix of
//                 the order covers the whole space evenly (a grid whose
//                 resolution refines as the budget grows).
//   random        points drawn uniformly without replacement.
//   evolutionary  the heuristic first, then each batch: a quarter random
//                 points (exploration), the rest mutants of the best trials
//                 so far (points of the space that differ from a parent in
//                 one or two parameters; parents drawn by rank, the best
//                 most often), as Ansor's evolutionary search does (without
//                 Ansor's learned cost model to rank them: not built yet).
// A program as the agent ("external", the kopt-agent protocol) is
// ExternalAgent.h's; makeAgent names it but cannot make it without the
// program's command.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_SEARCH_AGENT_H
#define KOPT_SEARCH_AGENT_H

#include "kopt/Search/Database.h"
#include "kopt/Search/Task.h"

#include <memory>
#include <string>
#include <vector>

namespace kopt::search {

/// A measured (or rejected) point of a task's space.
struct Trial {
  /// Index into task.space.
  int64_t point = -1;
  TrialRecord record;
};

class Agent {
public:
  virtual ~Agent() = default;
  /// The strategy's name ("random", ...), recorded with every trial.
  virtual std::string name() const = 0;
  /// Up to `n` indices of task.space not in `history`, distinct; fewer or
  /// none when the agent has nothing more to propose (the task is done).
  virtual std::vector<int64_t> propose(const Task &task,
                                       const std::vector<Trial> &history,
                                       size_t n) = 0;
  /// The results of the last proposals (history already holds them).
  virtual void observe(const Task &, const std::vector<Trial> &) {}
};

/// The names makeAgent knows.
const std::vector<std::string> &strategyNames();

/// A new agent of `strategy` for one task, seeded with `seed`; an unknown
/// name is an error that lists the known ones.
Expected<std::unique_ptr<Agent>> makeAgent(const std::string &strategy,
                                           uint64_t seed);

/// The usable trials of `history` sorted by median time, fastest first.
std::vector<const Trial *> rankTrials(const std::vector<Trial> &history);

} // namespace kopt::search

#endif // KOPT_SEARCH_AGENT_H
