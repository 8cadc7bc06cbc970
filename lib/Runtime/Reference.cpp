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
  int64_t cols = x.shape.back();
  int64_t rows = x.numElements() / cols;
  Shape outShape(x.shape.begin(), x.shape.end() - 1);
  HostTensor out(outShape, std::vector<double>(rows));
  parallelFor(rows, rowGrain(cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const double *row = x.data.data() + r * cols;
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
      out.data[r] = kind == ReduceKind::Mean ? acc / double(cols) : acc;
    }
  });
  return out;
}

HostTensor softmax(const HostTensor &x) {
  int64_t cols = x.shape.back();
  int64_t rows = x.numElements() / cols;
  HostTensor out(x.shape, std::vector<double>(x.data.size()));
  parallelFor(rows, rowGrain(cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const double *row = x.data.data() + r * cols;
      double *y = out.data.data() + r * cols;
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
    }
  });
  return out;
}

HostTensor rmsnorm(const HostTensor &x, const HostTensor *weight, double eps) {
  int64_t cols = x.shape.back();
  int64_t rows = x.numElements() / cols;
  HostTensor out(x.shape, std::vector<double>(x.data.size()));
  parallelFor(rows, rowGrain(cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const double *row = x.data.data() + r * cols;
      double *y = out.data.data() + r * cols;
      double sumsq = 0.0;
      for (int64_t c = 0; c < cols; ++c)
        sumsq += row[c] * row[c];
      double inv = 1.0 / std::sqrt(sumsq / double(cols) + eps);
      for (int64_t c = 0; c < cols; ++c)
        y[c] = row[c] * inv * (weight ? weight->data[c] : 1.0);
    }
  });
  return out;
}

HostTensor layernorm(const HostTensor &x, const HostTensor *weight,
                     const HostTensor *bias, double eps) {
  int64_t cols = x.shape.back();
  int64_t rows = x.numElements() / cols;
  HostTensor out(x.shape, std::vector<double>(x.data.size()));
  parallelFor(rows, rowGrain(cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const double *row = x.data.data() + r * cols;
      double *y = out.data.data() + r * cols;
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
    }
  });
  return out;
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

Expected<HostTensor>
compute(const KernelSpec &kernel,
        const std::map<std::string, const HostTensor *> &inputs) {
  std::string where = "reference for kernel '" + kernel.name + "'";
  if (kernel.op == OpKind::Matmul)
    return Status::error(where + ": matmul has no CPU reference (use cuBLAS)");
  const TensorSpec *result = kernel.findParam("result");
  if (!result)
    return Status::error(where + ": no 'result' parameter");

  // Every input parameter of the kernel must be given, with its shape.
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
  }
  auto input = [&](const char *name) -> const HostTensor * {
    if (!kernel.findParam(name))
      return nullptr;
    auto it = inputs.find(name);
    return it == inputs.end() ? nullptr : it->second;
  };

  HostTensor out;
  if (isBinaryOp(kernel.op)) {
    out = binary(kernel.op, *input("lhs"), *input("rhs"), result->shape);
  } else if (isUnaryOp(kernel.op)) {
    out = unary(kernel.op, kernel.attrs.approximate, *input("input"));
  } else {
    const HostTensor &x = *input("input");
    switch (kernel.op) {
    case OpKind::Reduce:
      out = reduce(kernel.attrs.reduceKind, x);
      break;
    case OpKind::Softmax:
      out = softmax(x);
      break;
    case OpKind::RmsNorm:
      out = rmsnorm(x, input("weight"), kernel.attrs.eps);
      break;
    case OpKind::LayerNorm:
      out = layernorm(x, input("weight"), input("bias"), kernel.attrs.eps);
      break;
    case OpKind::Pack:
      out = pack(x, kernel.attrs.transpose, result->shape);
      break;
    default:
      return Status::error(where + ": no reference for op " +
                           std::string(opName(kernel.op)));
    }
  }
  out.shape = result->shape;
  return std::move(out);
}

} // namespace kopt::rt::ref
