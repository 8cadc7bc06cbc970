//===- Agent.cpp - The heuristic, grid and random strategies --------------===//
//
// See include/kopt/Search/Agent.h; the evolutionary strategy is in
// Evolutionary.cpp.
//
//===----------------------------------------------------------------------===//

#include "kopt/Search/Agent.h"
#include "Internal.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <unordered_set>

namespace kopt::search {

namespace {

/// Which points of the space the history holds, kept up to date from the
/// history's new entries (the tuner only appends to it).
class Seen {
public:
  void update(const Task &task, const std::vector<Trial> &history) {
    if (seen.size() != task.space.size() || history.size() < counted) {
      seen.assign(task.space.size(), false);
      counted = 0;
    }
    for (; counted < history.size(); ++counted) {
      int64_t p = history[counted].point;
      if (p >= 0 && p < int64_t(seen.size()))
        seen[p] = true;
    }
  }
  bool operator()(int64_t p) const { return seen[p]; }
  size_t size() const { return counted; }

private:
  std::vector<bool> seen;
  size_t counted = 0;
};

class HeuristicAgent : public Agent {
public:
  std::string name() const override { return "heuristic"; }
  std::vector<int64_t> propose(const Task &task,
                               const std::vector<Trial> &history,
                               size_t n) override {
    seen.update(task, history);
    int64_t p = task.indexOf(task.heuristic);
    if (n == 0 || p < 0 || seen(p))
      return {};
    return {p};
  }

private:
  Seen seen;
};

/// The grid's order of [0, size): index floor(r size / 2^b) for r in the
/// bit-reversed order of [0, 2^b), 2^b >= size (the van der Corput
/// sequence), each index once: every prefix spreads over the whole range.
std::vector<int64_t> spreadOrder(int64_t size) {
  int bits = 0;
  while ((int64_t(1) << bits) < size)
    ++bits;
  std::vector<int64_t> order;
  order.reserve(size);
  std::vector<bool> used(size, false);
  for (int64_t i = 0; i < (int64_t(1) << bits); ++i) {
    int64_t r = 0;
    for (int b = 0; b < bits; ++b)
      if (i & (int64_t(1) << b))
        r |= int64_t(1) << (bits - 1 - b);
    int64_t idx = int64_t((__int128)r * size >> bits);
    if (!used[idx]) {
      used[idx] = true;
      order.push_back(idx);
    }
  }
  for (int64_t i = 0; i < size; ++i)
    if (!used[i])
      order.push_back(i);
  return order;
}

class GridAgent : public Agent {
public:
  std::string name() const override { return "grid"; }
  std::vector<int64_t> propose(const Task &task,
                               const std::vector<Trial> &history,
                               size_t n) override {
    if (int64_t(order.size()) != int64_t(task.space.size())) {
      order = spreadOrder(task.space.size());
      next = 0;
    }
    seen.update(task, history);
    std::vector<int64_t> out;
    for (; next < order.size() && out.size() < n; ++next)
      if (!seen(order[next]))
        out.push_back(order[next]);
    return out;
  }

private:
  std::vector<int64_t> order;
  size_t next = 0;
  Seen seen;
};

class RandomAgent : public Agent {
public:
  explicit RandomAgent(uint64_t seed) : rng(seed) {}
  std::string name() const override { return "random"; }
  std::vector<int64_t> propose(const Task &task,
                               const std::vector<Trial> &history,
                               size_t n) override {
    seen.update(task, history);
    return drawUntried(
        int64_t(task.space.size()), seen.size(), n,
        [&](int64_t p) { return !seen(p); }, rng);
  }

private:
  std::mt19937_64 rng;
  Seen seen;
};

} // namespace

std::vector<int64_t> drawUntried(int64_t size, size_t tried, size_t n,
                                 const std::function<bool(int64_t)> &untried,
                                 std::mt19937_64 &rng) {
  std::vector<int64_t> out;
  std::unordered_set<int64_t> taken;
  if (size > 0 && int64_t(tried) * 2 < size) {
    // Mostly untried: draw and redraw (a few tries per point).
    std::uniform_int_distribution<int64_t> d(0, size - 1);
    for (int64_t tries = 0; out.size() < n && tries < int64_t(n) * 64;
         ++tries) {
      int64_t p = d(rng);
      if (untried(p) && taken.insert(p).second)
        out.push_back(p);
    }
    if (out.size() == n)
      return out;
  }
  std::vector<int64_t> rest;
  for (int64_t i = 0; i < size; ++i)
    if (untried(i) && !taken.count(i))
      rest.push_back(i);
  std::shuffle(rest.begin(), rest.end(), rng);
  for (int64_t p : rest) {
    if (out.size() >= n)
      break;
    out.push_back(p);
  }
  return out;
}

const std::vector<std::string> &strategyNames() {
  static const std::vector<std::string> names = {
      "heuristic", "grid", "random", "evolutionary", "external"};
  return names;
}

Expected<std::unique_ptr<Agent>> makeAgent(const std::string &strategy,
                                           uint64_t seed) {
  if (strategy == "heuristic")
    return std::unique_ptr<Agent>(new HeuristicAgent());
  if (strategy == "grid")
    return std::unique_ptr<Agent>(new GridAgent());
  if (strategy == "random")
    return std::unique_ptr<Agent>(new RandomAgent(seed));
  if (strategy == "evolutionary")
    return makeEvolutionaryAgent(seed);
  if (strategy == "external")
    return Status::error("the external strategy runs a program as the agent: "
                         "give its command (kopt-tune --agent-cmd; "
                         "ExternalAgentHost in kopt/Search/ExternalAgent.h)");
  std::string known;
  for (const std::string &n : strategyNames())
    known += (known.empty() ? "" : ", ") + n;
  return Status::error("unknown strategy '" + strategy + "' (known: " + known +
                       ")");
}

std::vector<const Trial *> rankTrials(const std::vector<Trial> &history) {
  std::vector<const Trial *> out;
  for (const Trial &t : history)
    if (t.record.usable())
      out.push_back(&t);
  std::stable_sort(out.begin(), out.end(), [](const Trial *a, const Trial *b) {
    return a->record.medianMs < b->record.medianMs;
  });
  return out;
}

} // namespace kopt::search
