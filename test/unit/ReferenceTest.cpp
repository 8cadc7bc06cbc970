//===- ReferenceTest.cpp - CPU float64 references on tiny inputs ----------===//

#include "kopt/Runtime/Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace kopt::rt;

namespace {
HostTensor t(Shape shape, std::vector<double> data) {
  return HostTensor(std::move(shape), std::move(data));
}
void expectNear(const HostTensor &got, const std::vector<double> &want,
                double tol = 1e-15) {
  ASSERT_EQ(got.data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.data[i], want[i], tol) << "element " << i;
}
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
} // namespace

TEST(Reference, SoftmaxOfZeroAndLn2) {
  // exp(0) = 1, exp(ln 2) = 2: [1/3, 2/3].
  HostTensor y = ref::softmax(t({1, 2}, {0.0, std::log(2.0)}));
  EXPECT_EQ(y.shape, (Shape{1, 2}));
  expectNear(y, {1.0 / 3.0, 2.0 / 3.0});
}

TEST(Reference, SoftmaxRowsAreIndependentAndStable) {
  // Large inputs: subtracting the row max keeps exp finite.
  HostTensor y = ref::softmax(t({2, 2}, {1000.0, 1000.0, -5.0, -5.0}));
  expectNear(y, {0.5, 0.5, 0.5, 0.5});
}

TEST(Reference, RmsNormOf3And4) {
  // mean(x^2) = 12.5: [3, 4] / sqrt(12.5).
  double r = std::sqrt(12.5);
  expectNear(ref::rmsnorm(t({2}, {3.0, 4.0}), nullptr, 0.0), {3 / r, 4 / r});
  HostTensor w = t({2}, {2.0, -1.0});
  expectNear(ref::rmsnorm(t({1, 2}, {3.0, 4.0}), &w, 0.0), {6 / r, -4 / r});
  // eps is added under the square root.
  double re = std::sqrt(12.5 + 0.5);
  expectNear(ref::rmsnorm(t({2}, {3.0, 4.0}), nullptr, 0.5), {3 / re, 4 / re});
}

TEST(Reference, LayerNorm) {
  // [1, 3]: mean 2, biased variance 1: [-1, 1].
  expectNear(ref::layernorm(t({1, 2}, {1.0, 3.0}), nullptr, nullptr, 0.0),
             {-1.0, 1.0});
  HostTensor w = t({2}, {2.0, 3.0}), b = t({2}, {0.5, -0.5});
  expectNear(ref::layernorm(t({1, 2}, {1.0, 3.0}), &w, &b, 0.0), {-1.5, 2.5});
  // eps: [0, 4] has variance 4; with eps 5: +-2/3.
  expectNear(ref::layernorm(t({2}, {0.0, 4.0}), nullptr, nullptr, 5.0),
             {-2.0 / 3.0, 2.0 / 3.0});
}

TEST(Reference, Reduce) {
  HostTensor x = t({2, 3}, {1.0, 5.0, 3.0, -1.0, -2.0, -6.0});
  HostTensor s = ref::reduce(ReduceKind::Sum, x);
  EXPECT_EQ(s.shape, (Shape{2}));
  expectNear(s, {9.0, -9.0});
  expectNear(ref::reduce(ReduceKind::Max, x), {5.0, -1.0});
  expectNear(ref::reduce(ReduceKind::Mean, x), {3.0, -3.0});
  HostTensor withNaN = t({3}, {1.0, kNaN, 2.0});
  EXPECT_TRUE(std::isnan(ref::reduce(ReduceKind::Max, withNaN).data[0]));
  // A rank-1 input reduces to a scalar.
  EXPECT_EQ(ref::reduce(ReduceKind::Sum, t({3}, {1, 2, 3})).shape, Shape{});
}

TEST(Reference, UnaryScalars) {
  auto u = [](OpKind op, double x,
              GeluApproximation a = GeluApproximation::None) {
    return ref::unaryScalar(op, a, x);
  };
  EXPECT_DOUBLE_EQ(u(OpKind::Exp, 1.0), std::exp(1.0));
  EXPECT_DOUBLE_EQ(u(OpKind::Neg, 2.0), -2.0);
  EXPECT_DOUBLE_EQ(u(OpKind::Abs, -2.0), 2.0);
  EXPECT_DOUBLE_EQ(u(OpKind::Sqrt, 4.0), 2.0);
  EXPECT_DOUBLE_EQ(u(OpKind::Rsqrt, 4.0), 0.5);
  EXPECT_DOUBLE_EQ(u(OpKind::Tanh, 0.5), std::tanh(0.5));
  EXPECT_DOUBLE_EQ(u(OpKind::Sigmoid, 0.0), 0.5);
  EXPECT_DOUBLE_EQ(u(OpKind::Relu, -3.0), 0.0);
  EXPECT_DOUBLE_EQ(u(OpKind::Relu, 3.0), 3.0);
  EXPECT_NEAR(u(OpKind::Silu, 1.0), 0.7310585786300049, 1e-15);
  EXPECT_NEAR(u(OpKind::Gelu, 1.0), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(u(OpKind::Gelu, -1.0), -0.15865525393145707, 1e-15);
  EXPECT_NEAR(u(OpKind::Gelu, 1.0, GeluApproximation::Tanh), 0.8411919906082768,
              1e-15);
  EXPECT_DOUBLE_EQ(u(OpKind::Cast, 0.1), 0.1);
}

TEST(Reference, LogAndLog1p) {
  auto u = [](OpKind op, double x) {
    return ref::unaryScalar(op, GeluApproximation::None, x);
  };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  EXPECT_DOUBLE_EQ(u(OpKind::Log, 1.0), 0.0);
  EXPECT_DOUBLE_EQ(u(OpKind::Log, std::exp(2.0)), 2.0);
  EXPECT_DOUBLE_EQ(u(OpKind::Log, 0.5), -0.6931471805599453);
  // log: -inf at +-0, NaN below 0, +inf at +inf.
  EXPECT_EQ(u(OpKind::Log, 0.0), -kInf);
  EXPECT_EQ(u(OpKind::Log, -0.0), -kInf);
  EXPECT_TRUE(std::isnan(u(OpKind::Log, -1.0)));
  EXPECT_EQ(u(OpKind::Log, kInf), kInf);
  EXPECT_TRUE(std::isnan(u(OpKind::Log, kNaN)));
  // log1p(x) = log(1 + x), accurate near 0 where 1 + x rounds: log1p(1e-20)
  // is 1e-20, log(1 + 1e-20) would be 0.
  EXPECT_DOUBLE_EQ(u(OpKind::Log1p, 1.0), 0.6931471805599453);
  EXPECT_DOUBLE_EQ(u(OpKind::Log1p, -0.5), -0.6931471805599453);
  EXPECT_DOUBLE_EQ(u(OpKind::Log1p, 1e-20), 1e-20);
  EXPECT_NEAR(u(OpKind::Log1p, 1e-10), 9.9999999995e-11, 1e-25);
  // log1p: +-0 at +-0, -inf at -1, NaN below -1, +inf at +inf.
  EXPECT_EQ(u(OpKind::Log1p, 0.0), 0.0);
  EXPECT_TRUE(std::signbit(u(OpKind::Log1p, -0.0)));
  EXPECT_EQ(u(OpKind::Log1p, -1.0), -kInf);
  EXPECT_TRUE(std::isnan(u(OpKind::Log1p, -2.0)));
  EXPECT_EQ(u(OpKind::Log1p, kInf), kInf);
  // Through a tensor, as a kernel's graph evaluates it.
  HostTensor y = ref::unary(OpKind::Log, GeluApproximation::None,
                            t({2}, {1.0, std::exp(-3.0)}));
  EXPECT_EQ(y.shape, Shape{2});
  expectNear(y, {0.0, -3.0});
}

TEST(Reference, BinaryBroadcast) {
  // [2, 3] + [3]
  HostTensor y = ref::binary(OpKind::Add, t({2, 3}, {1, 2, 3, 4, 5, 6}),
                             t({3}, {10, 20, 30}), {2, 3});
  expectNear(y, {11, 22, 33, 14, 25, 36});
  // [2, 1] * [1, 3] -> [2, 3]
  y = ref::binary(OpKind::Mul, t({2, 1}, {2, 3}), t({1, 3}, {1, 10, 100}),
                  {2, 3});
  expectNear(y, {2, 20, 200, 3, 30, 300});
  // scalar - [2]
  y = ref::binary(OpKind::Sub, t({}, {1}), t({2}, {5, 7}), {2});
  expectNear(y, {-4, -6});
  y = ref::binary(OpKind::Div, t({2}, {1, 3}), t({2}, {4, -2}), {2});
  expectNear(y, {0.25, -1.5});
}

TEST(Reference, BinaryBroadcastLargeMatchesScalarLoop) {
  // Big enough to be split over threads; compare with a plain loop.
  Shape out = {37, 513, 9};
  HostTensor lhs = t({37, 1, 9}, {}), rhs = t({513, 1}, {});
  for (int i = 0; i < 37 * 9; ++i)
    lhs.data.push_back(i * 0.5);
  for (int i = 0; i < 513; ++i)
    rhs.data.push_back(-i);
  HostTensor y = ref::binary(OpKind::Sub, lhs, rhs, out);
  ASSERT_EQ(y.numElements(), 37 * 513 * 9);
  for (int a = 0; a < 37; ++a)
    for (int b = 0; b < 513; ++b)
      for (int c = 0; c < 9; ++c)
        ASSERT_EQ(y.data[(a * 513 + b) * 9 + c],
                  lhs.data[a * 9 + c] - rhs.data[b]);
}

TEST(Reference, MaxMinPropagateNaN) {
  HostTensor a = t({3}, {1.0, kNaN, 5.0}), b = t({3}, {2.0, 0.0, kNaN});
  HostTensor mx = ref::binary(OpKind::Max, a, b, {3});
  EXPECT_EQ(mx.data[0], 2.0);
  EXPECT_TRUE(std::isnan(mx.data[1]));
  EXPECT_TRUE(std::isnan(mx.data[2]));
  HostTensor mn = ref::binary(OpKind::Min, a, b, {3});
  EXPECT_EQ(mn.data[0], 1.0);
  EXPECT_TRUE(std::isnan(mn.data[1]));
  EXPECT_TRUE(std::isnan(mn.data[2]));
}

TEST(Reference, ComputeDispatch) {
  KernelSpec k;
  k.name = "rmsnorm_0";
  k.params = {{"input", Role::Input, DType::F32, {1, 2}},
              {"weight", Role::Input, DType::F32, {2}},
              {"result", Role::Output, DType::BF16, {1, 2}}};
  k.ops = {opOverParams(OpKind::RmsNorm, {}, k.params)}; // eps 0
  HostTensor x = t({1, 2}, {3.0, 4.0}), w = t({2}, {1.0, 2.0});
  Expected<HostTensor> y = ref::compute(k, {{"input", &x}, {"weight", &w}});
  ASSERT_TRUE(y.ok()) << y.error();
  double r = std::sqrt(12.5);
  expectNear(*y, {3 / r, 8 / r});
  EXPECT_EQ(y->shape, (Shape{1, 2}));

  Expected<HostTensor> missing = ref::compute(k, {{"input", &x}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("input 'weight' not given"),
            std::string::npos);

  HostTensor wrong = t({3}, {1, 2, 3});
  Expected<HostTensor> bad =
      ref::compute(k, {{"input", &x}, {"weight", &wrong}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("input 'weight' has shape [3]"),
            std::string::npos);

  // A matmul: the exact product in double (kopt-run uses cuBLAS for a
  // kernel that is one matmul, the CPU for a matmul in a chain).
  KernelSpec mm;
  mm.name = "mm";
  mm.params = {{"a", Role::Input, DType::F32, {2, 3}},
               {"b", Role::Input, DType::F32, {2, 3}},
               {"result", Role::Output, DType::F32, {2, 2}}};
  OpAttrs transposeB;
  transposeB.transposeB = true;
  mm.ops = {opOverParams(OpKind::Matmul, transposeB, mm.params)};
  HostTensor a = t({2, 3}, {1, 2, 3, 4, 5, 6}),
             b = t({2, 3}, {1, 0, 1, 0, 1, 0});
  Expected<HostTensor> c = ref::compute(mm, {{"a", &a}, {"b", &b}});
  ASSERT_TRUE(c.ok()) << c.error();
  expectNear(*c, {4, 2, 10, 5});
  // Without its inputs: an error.
  EXPECT_FALSE(ref::compute(mm, {}).ok());

  // reduce with a keepdim result shape
  KernelSpec red;
  red.name = "r";
  red.params = {{"input", Role::Input, DType::F32, {2, 2}},
                {"result", Role::Output, DType::F32, {2, 1}}};
  red.ops = {opOverParams(OpKind::Reduce, {}, red.params)}; // sum
  HostTensor rx = t({2, 2}, {1, 2, 3, 4});
  Expected<HostTensor> ry = ref::compute(red, {{"input", &rx}});
  ASSERT_TRUE(ry.ok()) << ry.error();
  EXPECT_EQ(ry->shape, (Shape{2, 1}));
  expectNear(*ry, {3, 7});
}

TEST(Reference, Pack) {
  HostTensor x = t({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor p = ref::pack(x, /*transpose=*/false, {3, 4});
  EXPECT_EQ(p.shape, (Shape{3, 4}));
  expectNear(p, {1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0, 0});
  HostTensor q = ref::pack(x, /*transpose=*/true, {3, 3});
  expectNear(q, {1, 4, 0, 2, 5, 0, 3, 6, 0});
  // Without padding, the transpose alone.
  expectNear(ref::pack(x, true, {3, 2}), {1, 4, 2, 5, 3, 6});
}

TEST(Reference, TwoOpChain) {
  // add -> rmsnorm: y = rmsnorm(a + b, weight), eps 0, through a value t.
  KernelSpec k;
  k.name = "add_rmsnorm_0";
  k.params = {{"a", Role::Input, DType::F32, {1, 2}},
              {"b", Role::Input, DType::F32, {2}},
              {"w", Role::Input, DType::F32, {2}},
              {"y", Role::Output, DType::BF16, {1, 2}}};
  k.values = {{"t", Role::Input, DType::F32, {1, 2}}};
  OpSpec add, norm;
  add.kind = OpKind::Add;
  add.operands = {{"lhs", "a"}, {"rhs", "b"}};
  add.result = "t";
  norm.kind = OpKind::RmsNorm;
  norm.operands = {{"input", "t"}, {"weight", "w"}};
  norm.result = "y";
  k.ops = {add, norm};
  ASSERT_TRUE(validateOps(k, "k").ok()) << validateOps(k, "k").message();

  HostTensor a = t({1, 2}, {1, 2}), b = t({2}, {2, 2}), w = t({2}, {1, 2});
  Expected<std::map<std::string, HostTensor>> out =
      ref::evaluate(k, {{"a", &a}, {"b", &b}, {"w", &w}});
  ASSERT_TRUE(out.ok()) << out.error();
  ASSERT_EQ(out->size(), 1u);
  // t = [3, 4]; mean(t^2) = 12.5.
  double r = std::sqrt(12.5);
  expectNear(out->at("y"), {3 / r, 8 / r});
  EXPECT_EQ(out->at("y").shape, (Shape{1, 2}));
  // compute() gives the first output.
  Expected<HostTensor> y = ref::compute(k, {{"a", &a}, {"b", &b}, {"w", &w}});
  ASSERT_TRUE(y.ok()) << y.error();
  expectNear(*y, {3 / r, 8 / r});
  // A missing input of a later op is caught before anything runs.
  EXPECT_NE(ref::evaluate(k, {{"a", &a}, {"b", &b}})
                .error()
                .find("input 'w' not given"),
            std::string::npos);
}

TEST(Reference, ThreeOpChain) {
  // matmul -> add bias -> gelu: y = gelu(x w^T + bias), two values between.
  KernelSpec k;
  k.name = "matmul_add_gelu_0";
  k.params = {{"x", Role::Input, DType::BF16, {2, 2}},
              {"w", Role::Input, DType::BF16, {2, 2}},
              {"bias", Role::Input, DType::F32, {2}},
              {"y", Role::Output, DType::F32, {2, 2}}};
  k.values = {{"t0", Role::Input, DType::F32, {2, 2}},
              {"t1", Role::Input, DType::F32, {2, 2}}};
  OpSpec mm, add, gelu;
  mm.kind = OpKind::Matmul;
  mm.attrs.transposeB = true;
  mm.operands = {{"a", "x"}, {"b", "w"}};
  mm.result = "t0";
  add.kind = OpKind::Add;
  add.operands = {{"lhs", "t0"}, {"rhs", "bias"}};
  add.result = "t1";
  gelu.kind = OpKind::Gelu; // approximate none: 0.5 v (1 + erf(v / sqrt 2))
  gelu.operands = {{"input", "t1"}};
  gelu.result = "y";
  k.ops = {mm, add, gelu};
  ASSERT_TRUE(validateOps(k, "k").ok()) << validateOps(k, "k").message();

  // x w^T = [[1 2] [3 4]] [[1 0] [1 2]] = [[3 4] [7 8]]; + [-1 -3] =
  // [[2 1] [6 5]].
  HostTensor x = t({2, 2}, {1, 2, 3, 4}), w = t({2, 2}, {1, 1, 0, 2}),
             bias = t({2}, {-1, -3});
  Expected<std::map<std::string, HostTensor>> out =
      ref::evaluate(k, {{"x", &x}, {"w", &w}, {"bias", &bias}});
  ASSERT_TRUE(out.ok()) << out.error();
  expectNear(out->at("y"), {1.9544997361036416, 0.8413447460685429,
                            5.999999994080474, 4.999998566742141});

  // A kernel with two outputs, the second read from the first: both kept.
  KernelSpec two = k;
  two.params.push_back({"z", Role::Output, DType::F32, {2, 2}});
  two.values.pop_back();
  two.ops[1].result = "z"; // t1 is now the output z, which gelu reads
  two.ops[2].operands = {{"input", "z"}};
  ASSERT_TRUE(validateOps(two, "k").ok()) << validateOps(two, "k").message();
  out = ref::evaluate(two, {{"x", &x}, {"w", &w}, {"bias", &bias}});
  ASSERT_TRUE(out.ok()) << out.error();
  expectNear(out->at("z"), {2, 1, 6, 5});
  expectNear(out->at("y"), {1.9544997361036416, 0.8413447460685429,
                            5.999999994080474, 4.999998566742141});
}
