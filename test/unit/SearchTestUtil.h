//===- SearchTestUtil.h - Tasks for the search tests ------------*- C++ -*-===//
//
// Shared by SearchTest.cpp (strategies, measurers, tuner, reports) and
// ExternalAgentTest.cpp (the kopt-agent protocol host).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TEST_UNIT_SEARCHTESTUTIL_H
#define KOPT_TEST_UNIT_SEARCHTESTUTIL_H

#include "kopt/Search/Task.h"

#include <gtest/gtest.h>

namespace kopt::search::test {

/// The task of an M x N x K matmul of `dt` (A, B and C) on sm_90a with A and
/// B K-contiguous, built the way kopt-tune builds one from a workload key
/// (taskFromWorkloadKey), kernel "matmul_0", its space filled.
inline Task makeTask(int64_t m, int64_t n, int64_t k,
                     schedule::DType dt = schedule::DType::BF16) {
  schedule::MatmulWorkload w;
  w.m = m;
  w.n = n;
  w.k = k;
  w.a = w.b = w.c = dt;
  w.aKContiguous = true;
  w.bKContiguous = true;
  Expected<Task> t = taskFromWorkloadKey(w.key("sm_90a"), "matmul");
  EXPECT_TRUE(t.ok()) << t.error();
  if (!t.ok())
    return Task();
  t->kernel = "matmul_0";
  fillSpace(*t);
  return t.take();
}

} // namespace kopt::search::test

#endif // KOPT_TEST_UNIT_SEARCHTESTUTIL_H
