//===- InputsTest.cpp - Random kernel inputs
//-------------------------------===//

#include "kopt/Runtime/Inputs.h"
#include "kopt/Runtime/Float16.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace kopt::rt;

namespace {
KernelSpec kernelOf(OpKind op, std::vector<TensorSpec> params) {
  KernelSpec k;
  k.name = "k";
  k.params = std::move(params);
  k.ops = {opOverParams(op, {}, k.params)};
  return k;
}
} // namespace

TEST(Inputs, Distributions) {
  TensorSpec in{"input", Role::Input, DType::F32, {8}};
  TensorSpec lhs{"lhs", Role::Input, DType::F32, {8}};
  TensorSpec rhs{"rhs", Role::Input, DType::F32, {8}};
  InputDistribution d = inputDistribution(kernelOf(OpKind::Exp, {in}), in);
  EXPECT_EQ(d.low, -1.0);
  EXPECT_EQ(d.high, 1.0);
  EXPECT_FALSE(d.randomSign);
  EXPECT_EQ(d.describe(), "uniform(-1, 1)");
  d = inputDistribution(kernelOf(OpKind::Rsqrt, {in}), in);
  EXPECT_EQ(d.low, 0.1);
  EXPECT_EQ(d.high, 4.0);
  // log needs x > 0, log1p x > -1.
  d = inputDistribution(kernelOf(OpKind::Log, {in}), in);
  EXPECT_EQ(d.low, 0.1);
  EXPECT_EQ(d.high, 4.0);
  EXPECT_FALSE(d.randomSign);
  d = inputDistribution(kernelOf(OpKind::Log1p, {in}), in);
  EXPECT_EQ(d.low, -0.5);
  EXPECT_EQ(d.high, 1.0);
  EXPECT_FALSE(d.randomSign);
  EXPECT_EQ(d.describe(), "uniform(-0.5, 1)");
  KernelSpec div = kernelOf(OpKind::Div, {lhs, rhs});
  EXPECT_FALSE(inputDistribution(div, lhs).randomSign);
  d = inputDistribution(div, rhs);
  EXPECT_TRUE(d.randomSign);
  EXPECT_EQ(d.describe(), "+-uniform(0.5, 2)");
}

TEST(Inputs, ValuesMatchBytesAndRange) {
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    TensorSpec p{"rhs", Role::Input, dtype, {300, 700}};
    InputDistribution d{0.5, 2.0, true};
    HostInput in = generateInput(p, d, 42);
    ASSERT_EQ(in.bytes.size(), size_t(p.numBytes()));
    ASSERT_EQ(in.values.shape, p.shape);
    ASSERT_EQ(in.values.numElements(), p.numElements());
    int negative = 0;
    for (int64_t i = 0; i < p.numElements(); ++i) {
      double v = in.values.data[i];
      ASSERT_EQ(v, decodeElement(dtype, in.bytes.data(), i));
      // Rounding to 16 bits may move a value just past the interval's ends.
      ASSERT_GE(std::fabs(v), 0.5 * (1 - 1e-2));
      ASSERT_LE(std::fabs(v), 2.0 * (1 + 1e-2));
      negative += v < 0;
    }
    // About half negative.
    EXPECT_NEAR(double(negative) / p.numElements(), 0.5, 0.01);
  }
}

TEST(Inputs, DeterministicAndSeedDependent) {
  TensorSpec p{"input", Role::Input, DType::BF16, {200000}};
  InputDistribution d;
  HostInput a = generateInput(p, d, 7), b = generateInput(p, d, 7);
  HostInput c = generateInput(p, d, 8);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_NE(a.bytes, c.bytes);
  double mean = 0;
  for (double v : a.values.data)
    mean += v;
  mean /= a.values.numElements();
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NE(deriveSeed(1, "k", "lhs"), deriveSeed(1, "k", "rhs"));
  EXPECT_NE(deriveSeed(1, "k", "lhs"), deriveSeed(2, "k", "lhs"));
  EXPECT_EQ(deriveSeed(1, "k", "lhs"), deriveSeed(1, "k", "lhs"));
}
