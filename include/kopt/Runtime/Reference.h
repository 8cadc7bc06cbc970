//===- Reference.h - CPU float64 references for kopt ops --------*- C++ -*-===//
//
// Independent host references for every op of docs/manifest.md and for a
// kernel's whole ops graph (evaluate: the ops in order, every intermediate
// value kept in double), so that a fused kernel is checked like a single op.
// kopt-run checks a kernel whose graph is one matmul against cuBLAS instead
// (Runtime.h): the float64 product is slow for large shapes. Inputs are the
// exact values the GPU saw (bf16/f16 decoded to double); everything is
// computed in double. Large tensors are split over threads (Parallel.h).
//
// Semantics:
//  - add sub mul div max min: numpy broadcasting of lhs and rhs to the result
//    shape; max/min propagate NaN (like torch.maximum / torch.minimum).
//  - exp neg abs sqrt rsqrt tanh log log1p sigmoid relu silu (log and log1p
//    as std::log and std::log1p: -inf at 0 and -1, NaN below); gelu with
//    approximate "none" = 0.5 x (1 + erf(x / sqrt 2)) or "tanh" =
//    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); cast = identity (the
//    rounding to the result dtype is the GPU's).
//  - reduce (sum, max, mean), softmax, rmsnorm, layernorm: over the last
//    dimension. rmsnorm: y = x / sqrt(mean(x^2) + eps) * w. layernorm:
//    y = (x - mean) / sqrt(var + eps) * w + b with the biased variance.
//    Weight and bias are optional.
//  - matmul: the exact product in double; pack: a zero-padded copy.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_REFERENCE_H
#define KOPT_RUNTIME_REFERENCE_H

#include "kopt/Manifest/Manifest.h"
#include "kopt/Runtime/Error.h"

#include <map>
#include <string>
#include <vector>

namespace kopt::rt {

/// A dense row-major array of doubles.
struct HostTensor {
  Shape shape;
  std::vector<double> data;

  HostTensor() = default;
  HostTensor(Shape s, std::vector<double> d)
      : shape(std::move(s)), data(std::move(d)) {}
  int64_t numElements() const { return static_cast<int64_t>(data.size()); }
};

namespace ref {

/// kopt.pack: `result[i][j]` = x[i][j] (x[j][i] with `transpose`) where x has
/// that element, else 0. `x` is 2-D; `resultShape` is at least as large.
HostTensor pack(const HostTensor &x, bool transpose, const Shape &resultShape);

/// The scalar function of a unary op (exp ... gelu, cast). `op` must satisfy
/// isUnaryOp().
double unaryScalar(OpKind op, GeluApproximation approximate, double x);
/// The scalar function of a binary op. `op` must satisfy isBinaryOp().
double binaryScalar(OpKind op, double lhs, double rhs);

/// Elementwise unary op; the result has x's shape.
HostTensor unary(OpKind op, GeluApproximation approximate, const HostTensor &x);
/// Elementwise binary op with numpy broadcasting to `resultShape` (both
/// operands must broadcast to it; see validateKernelOperands).
HostTensor binary(OpKind op, const HostTensor &lhs, const HostTensor &rhs,
                  const Shape &resultShape);
/// Reduction over the last dimension; the result has x's shape minus the
/// last dimension. `x` must have rank >= 1.
HostTensor reduce(ReduceKind kind, const HostTensor &x);
/// Softmax over the last dimension.
HostTensor softmax(const HostTensor &x);
/// RMS norm over the last dimension; `weight` may be null.
HostTensor rmsnorm(const HostTensor &x, const HostTensor *weight, double eps);
/// Layer norm over the last dimension; `weight` and `bias` may be null.
HostTensor layernorm(const HostTensor &x, const HostTensor *weight,
                     const HostTensor *bias, double eps);

/// C = op(A) op(B) (op = transpose when asked) in double: `a` [M, K] (or
/// [K, M] with transposeA), `b` [K, N] (or [N, K] with transposeB), 2-D.
HostTensor matmul(const HostTensor &a, const HostTensor &b, bool transposeA,
                  bool transposeB);

/// One op of a kernel's graph on its operands (by operand name: "a", "lhs",
/// "input", "weight", ...), giving a tensor of `resultShape`. The operands
/// must fit the op (validateOps).
Expected<HostTensor>
evaluateOp(const OpSpec &op,
           const std::map<std::string, const HostTensor *> &operands,
           const Shape &resultShape);

/// Evaluates `kernel`'s ops graph in order, in double, from its inputs (keyed
/// by parameter name), keeping every intermediate value; returns the value of
/// every output parameter, by name. Fails when an input is missing or has the
/// wrong shape.
Expected<std::map<std::string, HostTensor>>
evaluate(const KernelSpec &kernel,
         const std::map<std::string, const HostTensor *> &inputs);

/// The reference of `kernel`'s first output parameter (evaluate).
Expected<HostTensor>
compute(const KernelSpec &kernel,
        const std::map<std::string, const HostTensor *> &inputs);

} // namespace ref
} // namespace kopt::rt

#endif // KOPT_RUNTIME_REFERENCE_H
