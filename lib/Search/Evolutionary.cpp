//===- Evolutionary.cpp - The evolutionary strategy -----------------------===//
//
// See include/kopt/Search/Agent.h. A schedule is a vector of its parameters;
// a mutant of a parent is a point of the task's space at Hamming distance 1
// or 2 from it (so every mutant is valid: mutating inside the space instead
// of repairing invalid children). Parents are the best usable trials so far;
// a mutant's weight is the best 1 / ((rank + 1) x distance) over its parents,
// and a batch draws mutants by weight without replacement (Efraimidis-
// Spirakis keys), plus a quarter of random points.
//
//===----------------------------------------------------------------------===//

#include "kopt/Search/Agent.h"
#include "Internal.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace kopt::search {

namespace sched = kopt::schedule;

namespace {

constexpr size_t kParams = std::tuple_size<Params>::value;

int distance(const Params &a, const Params &b) {
  int d = 0;
  for (size_t i = 0; i < kParams; ++i)
    d += a[i] != b[i];
  return d;
}

/// Parents: the best usable trials.
constexpr size_t kParents = 8;

class EvolutionaryAgent : public Agent {
public:
  explicit EvolutionaryAgent(uint64_t seed) : rng(seed) {}
  std::string name() const override { return "evolutionary"; }

  std::vector<int64_t> propose(const Task &task,
                               const std::vector<Trial> &history,
                               size_t n) override {
    std::unordered_set<int64_t> seen;
    for (const Trial &t : history)
      seen.insert(t.point);
    std::vector<int64_t> out;
    auto take = [&](int64_t p) {
      if (out.size() < n && p >= 0 && seen.insert(p).second)
        out.push_back(p);
    };
    take(task.indexOf(task.heuristic));

    std::vector<const Trial *> ranked = rankTrials(history);
    size_t explore = ranked.empty() ? n : (n > 1 ? std::max<size_t>(1, n / 4) : 0);
    if (!ranked.empty()) {
      // Mutants of the parents, by weight.
      std::unordered_map<int64_t, double> weight;
      size_t parents = std::min(kParents, ranked.size());
      for (size_t r = 0; r < parents; ++r) {
        const Params p = paramsOf(task.space[ranked[r]->point]);
        for (int64_t i = 0; i < int64_t(task.space.size()); ++i) {
          if (seen.count(i))
            continue;
          int d = distance(p, paramsOf(task.space[i]));
          if (d < 1 || d > 2)
            continue;
          double w = 1.0 / (double(r + 1) * d);
          double &cur = weight[i];
          cur = std::max(cur, w);
        }
      }
      // Weighted sampling without replacement: the largest u^(1/w).
      std::uniform_real_distribution<double> u(1e-12, 1.0);
      std::vector<std::pair<double, int64_t>> keyed;
      keyed.reserve(weight.size());
      for (const auto &[i, w] : weight)
        keyed.emplace_back(std::log(u(rng)) / w, i);
      std::sort(keyed.begin(), keyed.end(),
                [](const auto &a, const auto &b) {
                  return a.first > b.first ||
                         (a.first == b.first && a.second < b.second);
                });
      size_t mutants = n > explore ? n - explore : 0;
      for (const auto &[key, i] : keyed) {
        if (out.size() >= mutants)
          break;
        take(i);
      }
    }
    // Random points for the rest (exploration, or when mutants ran out).
    if (out.size() < n)
      for (int64_t p : drawUntried(
               int64_t(task.space.size()), seen.size(), n - out.size(),
               [&](int64_t p) { return !seen.count(p); }, rng))
        take(p);
    return out;
  }

private:
  std::mt19937_64 rng;
};

} // namespace

std::unique_ptr<Agent> makeEvolutionaryAgent(uint64_t seed) {
  return std::make_unique<EvolutionaryAgent>(seed);
}

} // namespace kopt::search
