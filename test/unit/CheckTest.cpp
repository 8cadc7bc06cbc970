//===- CheckTest.cpp - Output checks
//---------------------------------------===//

#include "kopt/Runtime/Check.h"
#include "kopt/Runtime/Float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace kopt::rt;

TEST(Check, Tolerances) {
  EXPECT_DOUBLE_EQ(toleranceFor(DType::F32).relErr, 1e-5);
  EXPECT_DOUBLE_EQ(toleranceFor(DType::F16).relErr, 2e-3);
  EXPECT_DOUBLE_EQ(toleranceFor(DType::BF16).relErr, 1e-2);
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
