//===- Parallel.h - A minimal parallel-for over std::thread -----*- C++ -*-===//
//
// Host-side work on large tensors (references, input generation, checks) is
// split over threads. The number of threads is std::thread's
// hardware_concurrency, or the environment variable KOPT_NUM_THREADS when set.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_PARALLEL_H
#define KOPT_RUNTIME_PARALLEL_H

#include <cstdint>
#include <functional>

namespace kopt::rt {

/// Threads used by parallelFor (at least 1).
unsigned numHostThreads();

/// Calls `body(begin, end)` on disjoint ranges covering [0, n), on up to
/// numHostThreads() threads, each range at least `grain` long (except the
/// last). Runs inline when n <= grain. `body` must not throw. Returns when
/// every range is done.
void parallelFor(int64_t n, int64_t grain,
                 const std::function<void(int64_t begin, int64_t end)> &body);

} // namespace kopt::rt

#endif // KOPT_RUNTIME_PARALLEL_H
