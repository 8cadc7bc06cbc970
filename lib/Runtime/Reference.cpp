//===- Reference.cpp - CPU float64 references for kopt ops ----------------===//
//
// See include/kopt/Runtime/Reference.h for the semantics.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Reference.h"
#include "kopt/Runtime/Parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kopt::rt::ref {

namespace {
constexpr int64_t kElementGrain = 1 << 16;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Rows of `rowLength` elements per parallel chunk: about kElementGrain
/// elements, at least one row.
int64_t rowGrain(int64_t rowLength) {
  return std::max<int64_t>(1, kElementGrain / std::max<int64_t>(rowLength, 1));
}

/// A tensor of `outShape` whose rows of `outShape.back()` elements (one
/// element when `keepRows` is false: a reduction) are `rowFn(row, y, cols)` of
/// x's rows along its last dimension, rows in parallel.
template <typename RowFn>
HostTensor mapRows(const HostTensor &x, bool keepRows, RowFn rowFn) {
  int64_t cols = x.shape.back();
  int64_t rows = x.numElements() / cols;
  Shape outShape =
      keepRows ? x.shape : Shape(x.shape.begin(), x.shape.end() - 1);
  int64_t outCols = keepRows ? cols : 1;
  HostTensor out(outShape, std::vector<double>(rows * outCols));
  parallelFor(rows, rowGrain(cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      rowFn(x.data.data() + r * cols, out.data.data() + r * outCols, cols);
  });
  return out;
}
} // namespace

double unaryScalar(OpKind op, GeluApproximation approximate, double x) {
  switch (op) {
  case OpKind::Exp:
    return std::exp(x);
  case OpKind::Neg:
    return -x;
  case OpKind::Abs:
    return std::fabs(x);
  case OpKind::Sqrt:
    return std::sqrt(x);
  case OpKind::Rsqrt:
    return 1.0 / std::sqrt(x);
  case OpKind::Tanh:
    return std::tanh(x);
  case OpKind::Log:
    return std::log(x);
  case OpKind::Log1p:
    return std::log1p(x);
  case OpKind::Sigmoid:
    return 1.0 / (1.0 + std::exp(-x));
  case OpKind::Relu:
    return std::isnan(x) ? x : (x > 0.0 ? x : 0.0);
  case OpKind::Silu:
    return x / (1.0 + std::exp(-x));
  case OpKind::Gelu:
    if (approximate == GeluApproximation::Tanh) {
      const double k = std::sqrt(2.0 / M_PI);
      return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    }
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  case OpKind::Cast:
    return x;
  default:
    return kNaN;
  }
}

double binaryScalar(OpKind op, double lhs, double rhs) {
  switch (op) {
  case OpKind::Add:
    return lhs + rhs;
  case OpKind::Sub:
    return lhs - rhs;
  case OpKind::Mul:
    return lhs * rhs;
  case OpKind::Div:
    return lhs / rhs;
  case OpKind::Max:
    if (std::isnan(lhs) || std::isnan(rhs))
      return kNaN;
    return lhs > rhs ? lhs : rhs;
  case OpKind::Min:
    if (std::isnan(lhs) || std::isnan(rhs))
      return kNaN;
    return lhs < rhs ? lhs : rhs;
  default:
    return kNaN;
  }
}

HostTensor unary(OpKind op, GeluApproximation approximate,
                 const HostTensor &x) {
  HostTensor out(x.shape, std::vector<double>(x.data.size()));
  parallelFor(x.numElements(), kElementGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out.data[i] = unaryScalar(op, approximate, x.data[i]);
  });
  return out;
}

namespace {
/// Strides (in elements) of `operand` indexed by the dimensions of `result`
/// under numpy broadcasting: 0 for a broadcast dimension.
std::vector<int64_t> broadcastStrides(const Shape &operand,
                                      const Shape &result) {
  size_t rank = result.size(), offset = rank - operand.size();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = operand.size(); i-- > 0;) {
    strides[offset + i] = operand[i] == 1 ? 0 : stride;
    stride *= operand[i];
  }
  return strides;
}
} // namespace

HostTensor binary(OpKind op, const HostTensor &lhs, const HostTensor &rhs,
                  const Shape &resultShape) {
  int64_t n = numElements(resultShape);
  HostTensor out(resultShape, std::vector<double>(n));
  if (lhs.shape == resultShape && rhs.shape == resultShape) {
    parallelFor(n, kElementGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out.data[i] = binaryScalar(op, lhs.data[i], rhs.data[i]);
    });
    return out;
  }
  std::vector<int64_t> ls = broadcastStrides(lhs.shape, resultShape);
  std::vector<int64_t> rs = broadcastStrides(rhs.shape, resultShape);
  size_t rank = resultShape.size();
  parallelFor(n, kElementGrain, [&](int64_t begin, int64_t end) {
    // Multi-index of `begin`, then step through the range like an odometer.
    std::vector<int64_t> idx(rank, 0);
    int64_t rem = begin, lo = 0, ro = 0;
    for (size_t d = rank; d-- > 0;) {
      idx[d] = rem % resultShape[d];
      rem /= resultShape[d];
      lo += idx[d] * ls[d];
      ro += idx[d] * rs[d];
    }
    for (int64_t i = begin; i < end; ++i) {
      out.data[i] = binaryScalar(op, lhs.data[lo], rhs.data[ro]);
      for (size_t d = rank; d-- > 0;) {
        ++idx[d];
        lo += ls[d];
        ro += rs[d];
        if (idx[d] < resultShape[d])
          break;
        lo -= idx[d] * ls[d];
        ro -= idx[d] * rs[d];
        idx[d] = 0;
      }
    }
  });
  return out;
}

HostTensor reduce(ReduceKind kind, const HostTensor &x) {
  return mapRows(x, /*keepRows=*/false,
                 [&](const double *row, double *y, int64_t cols) {
                   double acc = kind == ReduceKind::Max ? row[0] : 0.0;
                   for (int64_t c = 0; c < cols; ++c) {
                     if (kind == ReduceKind::Max) {
                       if (std::isnan(row[c]) || std::isnan(acc))
                         acc = kNaN;
                       else if (row[c] > acc)
                         acc = row[c];
                     } else {
                       acc += row[c];
                     }
                   }
                   *y = kind == ReduceKind::Mean ? acc / double(cols) : acc;
                 });
}

HostTensor softmax(const HostTensor &x) {
  return mapRows(x, /*keepRows=*/true,
                 [](const double *row, double *y, int64_t cols) {
                   double mx = -std::numeric_limits<double>::infinity();
                   for (int64_t c = 0; c < cols; ++c)
                     mx = std::max(mx, row[c]);
                   double sum = 0.0;
                   for (int64_t c = 0; c < cols; ++c) {
                     y[c] = std::exp(row[c] - mx);
                     sum += y[c];
                   }
                   for (int64_t c = 0; c < cols; ++c)
                     y[c] /= sum;
                 });
}

HostTensor rmsnorm(const HostTensor &x, const HostTensor *weight, double eps) {
  return mapRows(x, /*keepRows=*/true,
                 [&](const double *row, double *y, int64_t cols) {
                   double sumsq = 0.0;
                   for (int64_t c = 0; c < cols; ++c)
                     sumsq += row[c] * row[c];
                   double inv = 1.0 / std::sqrt(sumsq / double(cols) + eps);
                   for (int64_t c = 0; c < cols; ++c)
                     y[c] = row[c] * inv * (weight ? weight->data[c] : 1.0);
                 });
}

HostTensor layernorm(const HostTensor &x, const HostTensor *weight,
                     const HostTensor *bias, double eps) {
  return mapRows(
      x, /*keepRows=*/true, [&](const double *row, double *y, int64_t cols) {
        double sum = 0.0;
        for (int64_t c = 0; c < cols; ++c)
          sum += row[c];
        double mean = sum / double(cols);
        double var = 0.0; // two passes: no cancellation
        for (int64_t c = 0; c < cols; ++c)
          var += (row[c] - mean) * (row[c] - mean);
        var /= double(cols);
        double inv = 1.0 / std::sqrt(var + eps);
        for (int64_t c = 0; c < cols; ++c)
          y[c] = (row[c] - mean) * inv * (weight ? weight->data[c] : 1.0) +
                 (bias ? bias->data[c] : 0.0);
      });
}

HostTensor pack(const HostTensor &x, bool transpose, const Shape &resultShape) {
  int64_t rows = x.shape[0], cols = x.shape[1];
  int64_t outRows = resultShape[0], outCols = resultShape[1];
  HostTensor out(resultShape,
                 std::vector<double>(static_cast<size_t>(outRows * outCols)));
  for (int64_t i = 0; i < outRows; ++i)
    for (int64_t j = 0; j < outCols; ++j) {
      int64_t r = transpose ? j : i, c = transpose ? i : j;
      if (r < rows && c < cols)
        out.data[i * outCols + j] = x.data[r * cols + c];
    }
  return out;
}

HostTensor matmul(const HostTensor &a, const HostTensor &b, bool transposeA,
                  bool transposeB) {
  int64_t m = transposeA ? a.shape[1] : a.shape[0];
  int64_t k = transposeA ? a.shape[0] : a.shape[1];
  int64_t n = transposeB ? b.shape[0] : b.shape[1];
  // Element (i, p) of op(A) and (p, j) of op(B).
  int64_t as = transposeA ? 1 : k, ak = transposeA ? m : 1;
  int64_t bk = transposeB ? 1 : n, bs = transposeB ? k : 1;
  HostTensor out({m, n}, std::vector<double>(static_cast<size_t>(m * n)));
  parallelFor(m, rowGrain(n * k), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (int64_t p = 0; p < k; ++p)
          acc += a.data[i * as + p * ak] * b.data[p * bk + j * bs];
        out.data[i * n + j] = acc;
      }
  });
  return out;
}

Expected<HostTensor>
evaluateOp(const OpSpec &op,
           const std::map<std::string, const HostTensor *> &operands,
           const Shape &resultShape) {
  auto get = [&](const char *name) -> const HostTensor * {
    auto it = operands.find(name);
    return it == operands.end() ? nullptr : it->second;
  };
  // validateOps guarantees the required operands; check anyway.
  size_t numRequired = 0;
  std::vector<std::string> names = operandNames(op.kind, &numRequired);
  for (size_t i = 0; i < numRequired; ++i)
    if (!get(names[i].c_str()))
      return Status::error(std::string("op ") + opName(op.kind) +
                           ": operand '" + names[i] + "' not given");

  HostTensor out;
  if (isBinaryOp(op.kind)) {
    out = binary(op.kind, *get("lhs"), *get("rhs"), resultShape);
  } else if (isUnaryOp(op.kind)) {
    out = unary(op.kind, op.attrs.approximate, *get("input"));
  } else {
    switch (op.kind) {
    case OpKind::Matmul:
      out = matmul(*get("a"), *get("b"), op.attrs.transposeA,
                   op.attrs.transposeB);
      break;
    case OpKind::Reduce:
      out = reduce(op.attrs.reduceKind, *get("input"));
      break;
    case OpKind::Softmax:
      out = softmax(*get("input"));
      break;
    case OpKind::RmsNorm:
      out = rmsnorm(*get("input"), get("weight"), op.attrs.eps);
      break;
    case OpKind::LayerNorm:
      out = layernorm(*get("input"), get("weight"), get("bias"), op.attrs.eps);
      break;
    case OpKind::Pack:
      out = pack(*get("input"), op.attrs.transpose, resultShape);
      break;
    default:
      return Status::error(std::string("no reference for op ") +
                           opName(op.kind));
    }
  }
  if (out.numElements() != numElements(resultShape))
    return Status::error(std::string("op ") + opName(op.kind) + " gives " +
                         std::to_string(out.numElements()) +
                         " elements, its result " + shapeToString(resultShape) +
                         " has " + std::to_string(numElements(resultShape)));
  out.shape = resultShape; // a reduce's keep-dim form
  return std::move(out);
}

Expected<std::map<std::string, HostTensor>>
evaluate(const KernelSpec &kernel,
         const std::map<std::string, const HostTensor *> &inputs) {
  std::string where = "reference for kernel '" + kernel.name + "'";
  // Every input parameter of the kernel must be given, with its shape.
  std::map<std::string, const HostTensor *> values;
  for (const TensorSpec &p : kernel.params) {
    if (p.role != Role::Input)
      continue;
    auto it = inputs.find(p.name);
    if (it == inputs.end() || !it->second)
      return Status::error(where + ": input '" + p.name + "' not given");
    const HostTensor &t = *it->second;
    if (t.shape != p.shape || t.numElements() != p.numElements())
      return Status::error(where + ": input '" + p.name + "' has shape " +
                           shapeToString(t.shape) + " and " +
                           std::to_string(t.numElements()) +
                           " elements, expected " + shapeToString(p.shape));
    values[p.name] = &t;
  }
  if (kernel.ops.empty())
    return Status::error(where + ": the kernel has no ops");

  // Results of the ops, intermediate and output, in double.
  std::map<std::string, HostTensor> computed;
  for (size_t i = 0; i < kernel.ops.size(); ++i) {
    const OpSpec &op = kernel.ops[i];
    std::string at = where + ": ops[" + std::to_string(i) + "]";
    std::map<std::string, const HostTensor *> operands;
    for (const OpOperand &o : op.operands) {
      auto it = values.find(o.value);
      if (it == values.end())
        return Status::error(at + ": '" + o.value +
                             "' is read before an op defines it");
      operands[o.name] = it->second;
    }
    const TensorSpec *result = kernel.findValue(op.result);
    if (!result)
      return Status::error(at + ": no parameter or value named '" + op.result +
                           "'");
    Expected<HostTensor> r = evaluateOp(op, operands, result->shape);
    if (!r.ok())
      return r.status().withContext(at);
    HostTensor &slot = computed[op.result] = r.take();
    values[op.result] = &slot;
  }

  std::map<std::string, HostTensor> outputs;
  for (const TensorSpec &p : kernel.params) {
    if (p.role != Role::Output)
      continue;
    auto it = computed.find(p.name);
    if (it == computed.end())
      return Status::error(where + ": no op defines output '" + p.name + "'");
    outputs[p.name] = std::move(it->second);
  }
  return std::move(outputs);
}

Expected<HostTensor>
compute(const KernelSpec &kernel,
        const std::map<std::string, const HostTensor *> &inputs) {
  Expected<std::map<std::string, HostTensor>> outputs =
      evaluate(kernel, inputs);
  if (!outputs.ok())
    return outputs.status();
  for (const TensorSpec &p : kernel.params)
    if (p.role == Role::Output)
      return std::move((*outputs)[p.name]);
  return Status::error("reference for kernel '" + kernel.name +
                       "': no output parameter");
}

} // namespace kopt::rt::ref
