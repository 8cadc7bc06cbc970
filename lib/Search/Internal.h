//===- Internal.h - Pieces the strategies share ---------------*- C++ -*-===//
//
// Not installed: lib/Search's own helpers.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_SEARCH_INTERNAL_H
#define KOPT_LIB_SEARCH_INTERNAL_H

#include "kopt/Search/Agent.h"

#include <functional>
#include <random>
#include <vector>

namespace kopt::search {

/// Up to `n` distinct points of [0, size) for which `untried` holds, drawn
/// uniformly: redraws while most of the space is untried (`tried` points
/// are not), else a shuffled scan of the untried ones.
std::vector<int64_t> drawUntried(int64_t size, size_t tried, size_t n,
                                 const std::function<bool(int64_t)> &untried,
                                 std::mt19937_64 &rng);

/// The evolutionary strategy (Evolutionary.cpp), for makeAgent.
std::unique_ptr<Agent> makeEvolutionaryAgent(uint64_t seed);

} // namespace kopt::search

#endif // KOPT_LIB_SEARCH_INTERNAL_H
