//===- CheckTest.cpp - Output checks
//---------------------------------------===//

#include "kopt/Runtime/Check.h"
#include "kopt/Runtime/Float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

using namespace kopt::rt;

TEST(Check, Tolerances) {
  EXPECT_DOUBLE_EQ(toleranceFor(DType::F32).relErr, 1e-5);
  EXPECT_DOUBLE_EQ(toleranceFor(DType::F16).relErr, 2e-3);
  EXPECT_DOUBLE_EQ(toleranceFor(DType::BF16).relErr, 1e-2);
}

TEST(Check, FusedKernelTolerance) {
  // A fused kernel is as precise as the coarsest value it rounds to: an f16
  // internal value under an f32 output gives f16's tolerance; outputs of
  // several dtypes give the loosest.
  KernelSpec k;
  k.params = {{"in0", Role::Input, DType::F16, {4, 8}},
              {"out0", Role::Output, DType::F32, {4, 8}}};
  EXPECT_DOUBLE_EQ(toleranceFor(k).relErr, 1e-5);
  k.values = {{"t0", Role::Input, DType::F16, {4, 8}}};
  EXPECT_DOUBLE_EQ(toleranceFor(k).relErr, 2e-3);
  k.params.push_back({"out1", Role::Output, DType::BF16, {4, 8}});
  EXPECT_DOUBLE_EQ(toleranceFor(k).relErr, 1e-2);
}

TEST(Check, ExactPasses) {
  float out[3] = {1.0f, -2.0f, 0.5f};
  double ref[3] = {1.0, -2.0, 0.5};
  CheckResult c =
      checkOutput(out, DType::F32, ref, 3, toleranceFor(DType::F32));
  EXPECT_TRUE(c.passed) << c.reason;
  EXPECT_EQ(c.relErr, 0.0);
  EXPECT_EQ(c.maxAbsErr, 0.0);
  EXPECT_EQ(c.maxAbsRef, 2.0);
  EXPECT_EQ(c.unwritten, 0);
  EXPECT_EQ(c.firstBadIndex, -1);
}

TEST(Check, RelativeError) {
  // ||out - ref|| = 0.05, ||ref|| = 5: 1e-2.
  float out[2] = {3.03f, 4.04f};
  double ref[2] = {3.0, 4.0};
  CheckResult c =
      checkOutput(out, DType::F32, ref, 2, toleranceFor(DType::F32));
  EXPECT_NEAR(c.relErr, 0.01, 1e-6);
  EXPECT_FALSE(c.passed);
  EXPECT_NE(c.reason.find("relative error"), std::string::npos);
  EXPECT_EQ(c.firstBadIndex, 1); // the largest absolute error
  // The same output rounded to bf16 with a bf16 tolerance passes.
  uint16_t b[2] = {floatToBf16(3.0f), floatToBf16(4.0f)};
  c = checkOutput(b, DType::BF16, ref, 2, toleranceFor(DType::BF16));
  EXPECT_TRUE(c.passed) << c.reason;
}

TEST(Check, MaxAbsError) {
  // One large error in many exact elements: rel_err small, max abs large.
  std::vector<float> out(100000, 1.0f);
  std::vector<double> ref(100000, 1.0);
  out[777] = 1.5f;
  CheckResult c = checkOutput(out.data(), DType::F32, ref.data(), ref.size(),
                              toleranceFor(DType::BF16));
  EXPECT_LT(c.relErr, 1e-2);
  EXPECT_DOUBLE_EQ(c.maxAbsErr, 0.5);
  EXPECT_FALSE(c.passed);
  EXPECT_NE(c.reason.find("max abs error"), std::string::npos);
  EXPECT_EQ(c.firstBadIndex, 777);
}

TEST(Check, UnwrittenAndNaN) {
  uint16_t out[4];
  std::memset(out, 0xff, sizeof(out)); // poison
  out[0] = floatToF16(1.0f);
  out[2] = 0x7e00; // a NaN written by the kernel
  double ref[4] = {1.0, 2.0, 3.0, 4.0};
  CheckResult c =
      checkOutput(out, DType::F16, ref, 4, toleranceFor(DType::F16));
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.unwritten, 2);
  EXPECT_EQ(c.nonFinite, 1);
  EXPECT_EQ(c.firstBadIndex, 1);
  EXPECT_NE(c.reason.find("2 of 4 output elements not written"),
            std::string::npos);
}

TEST(Check, NaNReference) {
  float out[2] = {std::numeric_limits<float>::quiet_NaN(), 1.0f};
  double ref[2] = {std::numeric_limits<double>::quiet_NaN(), 1.0};
  CheckResult c =
      checkOutput(out, DType::F32, ref, 2, toleranceFor(DType::F32));
  EXPECT_TRUE(c.passed) << c.reason;
  out[0] = 0.0f;
  c = checkOutput(out, DType::F32, ref, 2, toleranceFor(DType::F32));
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.specialMismatch, 1);
}

namespace {
/// A matmul kernel spec: a [M, K], b [K, N] of `in`, result [M, N] of `out`.
KernelSpec matmulKernel(DType in, DType out, bool tf32) {
  KernelSpec k;
  k.name = "mm";
  k.cls = KernelClass::Matmul;
  k.params = {{"a", Role::Input, in, {32, 48}},
              {"b", Role::Input, in, {48, 40}},
              {"result", Role::Output, out, {32, 40}}};
  OpAttrs attrs;
  attrs.tf32 = tf32;
  k.ops = {opOverParams(OpKind::Matmul, attrs, k.params)};
  return k;
}

} // namespace

TEST(Check, KernelTolerances) {
  // By the result's dtype, TF32 or not.
  EXPECT_DOUBLE_EQ(
      toleranceFor(matmulKernel(DType::F32, DType::F32, false)).relErr, 1e-5);
  EXPECT_DOUBLE_EQ(
      toleranceFor(matmulKernel(DType::BF16, DType::F32, false)).relErr, 1e-5);
  EXPECT_DOUBLE_EQ(
      toleranceFor(matmulKernel(DType::F16, DType::F16, false)).relErr, 2e-3);
  // TF32: the inputs are treated as f16 (10-bit mantissa): f16's tolerance.
  Tolerance tf32 = toleranceFor(matmulKernel(DType::F32, DType::F32, true));
  EXPECT_DOUBLE_EQ(tf32.relErr, toleranceFor(DType::F16).relErr);
  EXPECT_DOUBLE_EQ(tf32.relErr, 2e-3);
  EXPECT_DOUBLE_EQ(tf32.maxAbsFactor, 10.0);
  // A result coarser than that keeps its own.
  EXPECT_DOUBLE_EQ(
      toleranceFor(matmulKernel(DType::F32, DType::BF16, true)).relErr, 1e-2);
  // Not a matmul: the result's dtype alone.
  KernelSpec add;
  add.params = {{"lhs", Role::Input, DType::F32, {8}},
                {"rhs", Role::Input, DType::F32, {8}},
                {"result", Role::Output, DType::F16, {8}}};
  add.ops = {opOverParams(OpKind::Add, {}, add.params)};
  EXPECT_DOUBLE_EQ(toleranceFor(add).relErr, 2e-3);
}

TEST(Check, Tf32ToleranceFitsTf32Products) {
  // A TF32 product (operands truncated to 10 mantissa bits, f32 sums)
  // against the exact product of the f32 inputs, as kopt-run checks it:
  // within the TF32 tolerance, far outside f32's.
  const int M = 32, N = 40, K = 48;
  std::vector<float> a(M * K), b(K * N);
  uint64_t state = 12345;
  auto uniform = [&state] { // uniform(-1, 1), a fixed LCG
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return float(double(state >> 11) / double(1ull << 53) * 2.0 - 1.0);
  };
  for (float &x : a)
    x = uniform();
  for (float &x : b)
    x = uniform();
  std::vector<float> out(M * N);
  std::vector<double> ref(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0.0f;
      double exact = 0.0;
      for (int k = 0; k < K; ++k) {
        acc += truncateToTf32(a[i * K + k]) * truncateToTf32(b[k * N + j]);
        exact += double(a[i * K + k]) * double(b[k * N + j]);
      }
      out[i * N + j] = acc;
      ref[i * N + j] = exact;
    }
  CheckResult c =
      checkOutput(out.data(), DType::F32, ref.data(), M * N,
                  toleranceFor(matmulKernel(DType::F32, DType::F32, true)));
  EXPECT_TRUE(c.passed) << c.reason;
  EXPECT_GT(c.relErr, 1e-4); // really rounded: well above f32's error
  EXPECT_LT(c.relErr, 1e-3); // and with margin below 2e-3
  c = checkOutput(out.data(), DType::F32, ref.data(), M * N,
                  toleranceFor(matmulKernel(DType::F32, DType::F32, false)));
  EXPECT_FALSE(c.passed);
}
