//===- Parallel.cpp - A minimal parallel-for over std::thread -------------===//

#include "kopt/Runtime/Parallel.h"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <vector>

namespace kopt::rt {

unsigned numHostThreads() {
  static const unsigned threads = [] {
    if (const char *env = std::getenv("KOPT_NUM_THREADS")) {
      long v = std::strtol(env, nullptr, 10);
      if (v > 0)
        return static_cast<unsigned>(std::min(v, 1024L));
    }
    unsigned hw = std::thread::hardware_concurrency();
    return hw ? hw : 1u;
  }();
  return threads;
}

void parallelFor(int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &body) {
  if (n <= 0)
    return;
  grain = std::max<int64_t>(grain, 1);
  int64_t chunks = std::min<int64_t>(numHostThreads(), (n + grain - 1) / grain);
  if (chunks <= 1) {
    body(0, n);
    return;
  }
  int64_t step = (n + chunks - 1) / chunks;
  std::vector<std::thread> threads;
  threads.reserve(chunks - 1);
  for (int64_t c = 1; c < chunks; ++c) {
    int64_t begin = c * step, end = std::min(n, begin + step);
    if (begin < end)
      threads.emplace_back(body, begin, end);
  }
  body(0, std::min(n, step));
  for (std::thread &t : threads)
    t.join();
}

} // namespace kopt::rt
