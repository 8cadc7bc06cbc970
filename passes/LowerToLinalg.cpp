//===- LowerToLinalg.cpp - kopt-lower-to-linalg ---------------------------===//
//
// The one definition of the kopt ops' semantics (docs/ops.md gives the same
// formulas in words). Each op becomes linalg.fill / linalg.generic ops on
// tensors:
//   - elementwise ops: one parallel generic with NumPy broadcast indexing maps;
//   - matmul: fill(0) + a contraction generic accumulating in f32 (+ a rounding
//     generic when the result is not f32);
//   - reduce, softmax, rmsnorm, layernorm: a chain of row reductions over the
//   last
//     dimension (iterators [parallel..., reduction], f32 accumulators
//     initialised by linalg.fill), row-scalar generics over the leading
//     dimensions, and one final parallel generic that reads the input, row
//     scalars and per-feature vectors.
// The kernel builders (lib/KernelBuilders) take their scalar code from these
// payloads; the CPU reference tests run this same form.
//
//===----------------------------------------------------------------------===//

#include "kopt/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include <cmath>

namespace kopt {
#define GEN_PASS_DEF_KOPTLOWERTOLINALG
#include "kopt/Transforms/Passes.h.inc"
} // namespace kopt

using namespace mlir;
using namespace kopt;

namespace {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// Builds linalg ops for one kopt op at the builder's insertion point.
class Lowering {
public:
  Lowering(OpBuilder &b, Location loc) : b(b), loc(loc), f32(b.getF32Type()) {}

  /// Extends a scalar to f32 (no-op on f32).
  Value ext(OpBuilder &ob, Location l, Value v) {
    if (v.getType() == f32)
      return v;
    return arith::ExtFOp::create(ob, l, f32, v);
  }
  /// Rounds an f32 scalar to `ty` (no-op on f32).
  Value round(OpBuilder &ob, Location l, Value v, Type ty) {
    if (v.getType() == ty)
      return v;
    return arith::TruncFOp::create(ob, l, ty, v);
  }
  Value cst(OpBuilder &ob, Location l, double value) {
    return arith::ConstantOp::create(ob, l, ob.getF32FloatAttr(value));
  }

  /// A NumPy broadcast map from the iteration space of rank `rank` to an
  /// operand of shape `shape` (aligned at the trailing dimension; size-1 dims
  /// read index 0).
  AffineMap broadcastMap(ArrayRef<int64_t> shape,
                         ArrayRef<int64_t> resultShape) {
    unsigned rank = resultShape.size();
    SmallVector<AffineExpr> exprs;
    unsigned offset = rank - shape.size();
    for (unsigned i = 0; i < shape.size(); ++i) {
      if (shape[i] == 1 && resultShape[offset + i] != 1)
        exprs.push_back(b.getAffineConstantExpr(0));
      else
        exprs.push_back(b.getAffineDimExpr(offset + i));
    }
    return AffineMap::get(rank, 0, exprs, b.getContext());
  }

  Value empty(ArrayRef<int64_t> shape, Type elt) {
    return tensor::EmptyOp::create(b, loc, shape, elt);
  }

  /// One linalg.generic with a single result.
  Value generic(ValueRange ins, ArrayRef<AffineMap> inMaps, Value init,
                AffineMap outMap, ArrayRef<utils::IteratorType> iters,
                BodyFn body) {
    SmallVector<AffineMap> maps(inMaps.begin(), inMaps.end());
    maps.push_back(outMap);
    auto op = linalg::GenericOp::create(
        b, loc, init.getType(), ins, init, maps, iters,
        [&](OpBuilder &ob, Location l, ValueRange args) {
          linalg::YieldOp::create(ob, l, body(ob, l, args));
        });
    return op.getResult(0);
  }

  /// Elementwise: `fn` gets the f32 values of `ins` and returns the f32 result.
  Value elementwise(ValueRange ins, RankedTensorType resultType,
                    function_ref<Value(OpBuilder &, Location, ValueRange)> fn) {
    ArrayRef<int64_t> shape = resultType.getShape();
    SmallVector<AffineMap> maps;
    for (Value v : ins)
      maps.push_back(
          broadcastMap(cast<RankedTensorType>(v.getType()).getShape(), shape));
    SmallVector<utils::IteratorType> iters(shape.size(),
                                           utils::IteratorType::parallel);
    Type elt = resultType.getElementType();
    return generic(ins, maps, empty(shape, elt),
                   b.getMultiDimIdentityMap(shape.size()), iters,
                   [&](OpBuilder &ob, Location l, ValueRange args) {
                     SmallVector<Value> xs;
                     for (Value a : args.drop_back())
                       xs.push_back(ext(ob, l, a));
                     return round(ob, l, fn(ob, l, xs), elt);
                   });
  }

  //===--- Row operators -------------------------------------------------===//

  /// Context for ops over the last dimension of `x`.
  struct Rows {
    SmallVector<int64_t> shape;    // the input's shape
    SmallVector<int64_t> rowShape; // without the last dimension
    AffineMap id, row, feature;    // maps from the full iteration space
    int64_t n;                     // size of the last dimension
  };
  Rows rows(Value x) {
    Rows r;
    auto ty = cast<RankedTensorType>(x.getType());
    r.shape.assign(ty.getShape().begin(), ty.getShape().end());
    r.rowShape.assign(r.shape.begin(), r.shape.end() - 1);
    unsigned rank = r.shape.size();
    r.id = b.getMultiDimIdentityMap(rank);
    r.row =
        AffineMap::get(rank, 0, r.id.getResults().drop_back(), b.getContext());
    r.feature =
        AffineMap::get(rank, 0, b.getAffineDimExpr(rank - 1), b.getContext());
    r.n = r.shape.back();
    return r;
  }

  /// A row reduction into an f32 row tensor initialised to `init`: `step` gets
  /// the f32 values of (x, rowScalars...) and the accumulator, and returns the
  /// new one.
  Value reduceRows(
      const Rows &r, Value x, ValueRange rowScalars, double init,
      function_ref<Value(OpBuilder &, Location, ValueRange, Value)> step) {
    Value acc = empty(r.rowShape, f32);
    acc = linalg::FillOp::create(b, loc, cst(b, loc, init), acc).getResult(0);
    SmallVector<Value> ins = {x};
    SmallVector<AffineMap> maps = {r.id};
    for (Value s : rowScalars) {
      ins.push_back(s);
      maps.push_back(r.row);
    }
    SmallVector<utils::IteratorType> iters(r.shape.size(),
                                           utils::IteratorType::parallel);
    iters.back() = utils::IteratorType::reduction;
    return generic(ins, maps, acc, r.row, iters,
                   [&](OpBuilder &ob, Location l, ValueRange args) {
                     SmallVector<Value> xs;
                     for (Value a : args.drop_back())
                       xs.push_back(ext(ob, l, a));
                     return step(ob, l, xs, args.back());
                   });
  }

  /// A row-scalar computation over the leading dimensions (f32 in, `elt` out).
  Value mapRows(const Rows &r, ValueRange ins, Type elt,
                function_ref<Value(OpBuilder &, Location, ValueRange)> fn) {
    unsigned rank = r.rowShape.size();
    SmallVector<AffineMap> maps(ins.size(), b.getMultiDimIdentityMap(rank));
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    return generic(ins, maps, empty(r.rowShape, elt),
                   b.getMultiDimIdentityMap(rank), iters,
                   [&](OpBuilder &ob, Location l, ValueRange args) {
                     return round(ob, l, fn(ob, l, args.drop_back()), elt);
                   });
  }

  /// The final parallel pass over the rows: `fn` gets f32 values of x, then the
  /// row scalars, then the per-feature vectors (all optional ones present).
  Value mapFull(const Rows &r, Value x, ValueRange rowScalars,
                ValueRange features, Type elt,
                function_ref<Value(OpBuilder &, Location, ValueRange)> fn) {
    SmallVector<Value> ins = {x};
    SmallVector<AffineMap> maps = {r.id};
    for (Value s : rowScalars) {
      ins.push_back(s);
      maps.push_back(r.row);
    }
    for (Value f : features) {
      ins.push_back(f);
      maps.push_back(r.feature);
    }
    SmallVector<utils::IteratorType> iters(r.shape.size(),
                                           utils::IteratorType::parallel);
    return generic(ins, maps, empty(r.shape, elt), r.id, iters,
                   [&](OpBuilder &ob, Location l, ValueRange args) {
                     SmallVector<Value> xs;
                     for (Value a : args.drop_back())
                       xs.push_back(ext(ob, l, a));
                     return round(ob, l, fn(ob, l, xs), elt);
                   });
  }

  //===--- Per-op definitions ---------------------------------------------===//

  Value lower(Operation *op);

private:
  OpBuilder &b;
  Location loc;
  Type f32;
};

Value sigmoid(OpBuilder &b, Location l, Value x) {
  Value one = arith::ConstantOp::create(b, l, b.getF32FloatAttr(1.0));
  Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, x));
  return arith::DivFOp::create(b, l, one, arith::AddFOp::create(b, l, one, e));
}

Value Lowering::lower(Operation *op) {
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Type elt = resultType.getElementType();

  // Binary elementwise ops.
  auto binary = [&](auto make) {
    return elementwise(op->getOperands(), resultType,
                       [&](OpBuilder &ob, Location l, ValueRange x) -> Value {
                         return make(ob, l, x[0], x[1]);
                       });
  };
  if (isa<AddOp>(op))
    return binary([](OpBuilder &ob, Location l, Value x, Value y) -> Value {
      return arith::AddFOp::create(ob, l, x, y);
    });
  if (isa<SubOp>(op))
    return binary([](OpBuilder &ob, Location l, Value x, Value y) -> Value {
      return arith::SubFOp::create(ob, l, x, y);
    });
  if (isa<MulOp>(op))
    return binary([](OpBuilder &ob, Location l, Value x, Value y) -> Value {
      return arith::MulFOp::create(ob, l, x, y);
    });
  if (isa<DivOp>(op))
    return binary([](OpBuilder &ob, Location l, Value x, Value y) -> Value {
      return arith::DivFOp::create(ob, l, x, y);
    });
  if (isa<MaxOp>(op))
    return binary([](OpBuilder &ob, Location l, Value x, Value y) -> Value {
      return arith::MaximumFOp::create(ob, l, x, y);
    });
  if (isa<MinOp>(op))
    return binary([](OpBuilder &ob, Location l, Value x, Value y) -> Value {
      return arith::MinimumFOp::create(ob, l, x, y);
    });

  // Unary elementwise ops.
  auto unary = [&](function_ref<Value(OpBuilder &, Location, Value)> make) {
    return elementwise(op->getOperands(), resultType,
                       [&](OpBuilder &ob, Location l, ValueRange x) -> Value {
                         return make(ob, l, x[0]);
                       });
  };
  if (isa<ExpOp>(op))
    return unary([](OpBuilder &ob, Location l, Value x) -> Value {
      return math::ExpOp::create(ob, l, x);
    });
  if (isa<NegOp>(op))
    return unary([](OpBuilder &ob, Location l, Value x) -> Value {
      return arith::NegFOp::create(ob, l, x);
    });
  if (isa<AbsOp>(op))
    return unary([](OpBuilder &ob, Location l, Value x) -> Value {
      return math::AbsFOp::create(ob, l, x);
    });
  if (isa<SqrtOp>(op))
    return unary([](OpBuilder &ob, Location l, Value x) -> Value {
      return math::SqrtOp::create(ob, l, x);
    });
  if (isa<RsqrtOp>(op))
    return unary([](OpBuilder &ob, Location l, Value x) -> Value {
      return math::RsqrtOp::create(ob, l, x);
    });
  if (isa<TanhOp>(op))
    return unary([](OpBuilder &ob, Location l, Value x) -> Value {
      return math::TanhOp::create(ob, l, x);
    });
  if (isa<LogOp>(op))
    return unary([](OpBuilder &ob, Location l, Value x) -> Value {
      return math::LogOp::create(ob, l, x);
    });
  if (isa<Log1pOp>(op))
    return unary([](OpBuilder &ob, Location l, Value x) -> Value {
      return math::Log1pOp::create(ob, l, x);
    });
  if (isa<SigmoidOp>(op))
    return unary(sigmoid);
  if (isa<ReluOp>(op))
    return unary([&](OpBuilder &ob, Location l, Value x) -> Value {
      return arith::MaximumFOp::create(ob, l, x, cst(ob, l, 0.0));
    });
  if (isa<SiluOp>(op))
    return unary([](OpBuilder &ob, Location l, Value x) -> Value {
      return arith::MulFOp::create(ob, l, x, sigmoid(ob, l, x));
    });
  if (auto gelu = dyn_cast<GeluOp>(op)) {
    bool tanhForm = gelu.getApproximate() == GeluApproximation::Tanh;
    return unary([&](OpBuilder &ob, Location l, Value x) -> Value {
      Value cdf2; // 1 + erf(x / sqrt 2), or its tanh approximation
      if (tanhForm) {
        // sqrt(2/pi) * (x + 0.044715 x^3)
        Value x3 =
            arith::MulFOp::create(ob, l, x, arith::MulFOp::create(ob, l, x, x));
        Value inner = arith::AddFOp::create(
            ob, l, x, arith::MulFOp::create(ob, l, cst(ob, l, 0.044715), x3));
        inner = arith::MulFOp::create(ob, l, cst(ob, l, std::sqrt(2.0 / M_PI)),
                                      inner);
        cdf2 = arith::AddFOp::create(ob, l, cst(ob, l, 1.0),
                                     math::TanhOp::create(ob, l, inner));
      } else {
        Value scaled = arith::MulFOp::create(ob, l, x, cst(ob, l, M_SQRT1_2));
        cdf2 = arith::AddFOp::create(ob, l, cst(ob, l, 1.0),
                                     math::ErfOp::create(ob, l, scaled));
      }
      Value half = arith::MulFOp::create(ob, l, cst(ob, l, 0.5), x);
      return arith::MulFOp::create(ob, l, half, cdf2);
    });
  }
  if (isa<CastOp>(op))
    return unary([](OpBuilder &, Location, Value x) -> Value { return x; });

  // Matmul: f32 accumulation, one rounding.
  if (auto pack = dyn_cast<PackOp>(op)) {
    // A copy generic (through the transposed map when asked for), then
    // tensor.pad with zeros up to the result's shape.
    auto inType = cast<RankedTensorType>(pack.getInput().getType());
    SmallVector<int64_t> srcShape(inType.getShape());
    AffineMap inMap = b.getMultiDimIdentityMap(2);
    if (pack.getTranspose()) {
      std::swap(srcShape[0], srcShape[1]);
      inMap = AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0},
                                           b.getContext());
    }
    Value copy =
        generic(pack.getInput(), inMap, empty(srcShape, elt),
                b.getMultiDimIdentityMap(2),
                {utils::IteratorType::parallel, utils::IteratorType::parallel},
                [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    if (ArrayRef<int64_t>(srcShape) == resultType.getShape())
      return copy;
    SmallVector<OpFoldResult> low(2, b.getIndexAttr(0));
    SmallVector<OpFoldResult> high = {
        b.getIndexAttr(resultType.getDimSize(0) - srcShape[0]),
        b.getIndexAttr(resultType.getDimSize(1) - srcShape[1])};
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elt));
    return tensor::PadOp::create(b, loc, resultType, copy, low, high, zero)
        .getResult();
  }
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    AffineExpr m = b.getAffineDimExpr(0), n = b.getAffineDimExpr(1),
               k = b.getAffineDimExpr(2);
    MLIRContext *ctx = b.getContext();
    AffineMap aMap =
        AffineMap::get(3, 0,
                       mm.getTransposeA() ? ArrayRef<AffineExpr>{k, m}
                                          : ArrayRef<AffineExpr>{m, k},
                       ctx);
    AffineMap bMap =
        AffineMap::get(3, 0,
                       mm.getTransposeB() ? ArrayRef<AffineExpr>{n, k}
                                          : ArrayRef<AffineExpr>{k, n},
                       ctx);
    AffineMap cMap = AffineMap::get(3, 0, {m, n}, ctx);
    Value acc = empty(resultType.getShape(), f32);
    acc = linalg::FillOp::create(b, loc, cst(b, loc, 0.0), acc).getResult(0);
    Value prod =
        generic({mm.getA(), mm.getB()}, {aMap, bMap}, acc, cMap,
                {utils::IteratorType::parallel, utils::IteratorType::parallel,
                 utils::IteratorType::reduction},
                [&](OpBuilder &ob, Location l, ValueRange args) -> Value {
                  Value p = arith::MulFOp::create(ob, l, ext(ob, l, args[0]),
                                                  ext(ob, l, args[1]));
                  return arith::AddFOp::create(ob, l, args[2], p);
                });
    if (elt == f32)
      return prod;
    return elementwise(
        prod, resultType,
        [](OpBuilder &, Location, ValueRange x) { return x[0]; });
  }

  // Row operators.
  auto add = [](OpBuilder &ob, Location l, Value x, Value y) -> Value {
    return arith::AddFOp::create(ob, l, x, y);
  };
  if (auto red = dyn_cast<ReduceOp>(op)) {
    Rows r = rows(red.getInput());
    ReduceKind kind = red.getKind();
    Value acc = reduceRows(
        r, red.getInput(), {}, kind == ReduceKind::Max ? -INFINITY : 0.0,
        [&](OpBuilder &ob, Location l, ValueRange x, Value a) -> Value {
          if (kind == ReduceKind::Max)
            return arith::MaximumFOp::create(ob, l, x[0], a);
          return add(ob, l, x[0], a);
        });
    if (kind != ReduceKind::Mean && elt == f32)
      return acc;
    double n = static_cast<double>(r.n);
    return mapRows(r, acc, elt,
                   [&](OpBuilder &ob, Location l, ValueRange x) -> Value {
                     if (kind != ReduceKind::Mean)
                       return x[0];
                     return arith::DivFOp::create(ob, l, x[0], cst(ob, l, n));
                   });
  }
  if (auto sm = dyn_cast<SoftmaxOp>(op)) {
    Value x = sm.getInput();
    Rows r = rows(x);
    Value max = reduceRows(
        r, x, {}, -INFINITY,
        [](OpBuilder &ob, Location l, ValueRange v, Value a) -> Value {
          return arith::MaximumFOp::create(ob, l, v[0], a);
        });
    Value sum = reduceRows(
        r, x, max, 0.0,
        [&](OpBuilder &ob, Location l, ValueRange v, Value a) -> Value {
          Value d = arith::SubFOp::create(ob, l, v[0], v[1]);
          return add(ob, l, math::ExpOp::create(ob, l, d), a);
        });
    // 1 / s once per row, then a product per element (a division per
    // element costs several times a multiplication on the GPU).
    Value inv = mapRows(
        r, sum, f32, [&](OpBuilder &ob, Location l, ValueRange v) -> Value {
          return arith::DivFOp::create(ob, l, cst(ob, l, 1.0), v[0]);
        });
    return mapFull(r, x, {max, inv}, {}, elt,
                   [](OpBuilder &ob, Location l, ValueRange v) -> Value {
                     Value d = arith::SubFOp::create(ob, l, v[0], v[1]);
                     return arith::MulFOp::create(
                         ob, l, math::ExpOp::create(ob, l, d), v[2]);
                   });
  }
  if (auto norm = dyn_cast<RMSNormOp>(op)) {
    Value x = norm.getInput();
    Rows r = rows(x);
    double n = static_cast<double>(r.n), eps = norm.getEps().convertToDouble();
    Value ss = reduceRows(
        r, x, {}, 0.0,
        [&](OpBuilder &ob, Location l, ValueRange v, Value a) -> Value {
          return add(ob, l, arith::MulFOp::create(ob, l, v[0], v[0]), a);
        });
    // rstd = 1 / sqrt(sum(x^2) / n + eps)
    Value rstd = mapRows(
        r, ss, f32, [&](OpBuilder &ob, Location l, ValueRange v) -> Value {
          Value mean = arith::DivFOp::create(ob, l, v[0], cst(ob, l, n));
          return math::RsqrtOp::create(ob, l,
                                       add(ob, l, mean, cst(ob, l, eps)));
        });
    SmallVector<Value> features;
    if (norm.getWeight())
      features.push_back(norm.getWeight());
    return mapFull(r, x, rstd, features, elt,
                   [&](OpBuilder &ob, Location l, ValueRange v) -> Value {
                     Value y = arith::MulFOp::create(ob, l, v[0], v[1]);
                     if (v.size() > 2)
                       y = arith::MulFOp::create(ob, l, y, v[2]);
                     return y;
                   });
  }
  if (auto norm = dyn_cast<LayerNormOp>(op)) {
    Value x = norm.getInput();
    Rows r = rows(x);
    double n = static_cast<double>(r.n), eps = norm.getEps().convertToDouble();
    Value sum =
        reduceRows(r, x, {}, 0.0,
                   [&](OpBuilder &ob, Location l, ValueRange v,
                       Value a) -> Value { return add(ob, l, v[0], a); });
    Value mean = mapRows(
        r, sum, f32, [&](OpBuilder &ob, Location l, ValueRange v) -> Value {
          return arith::DivFOp::create(ob, l, v[0], cst(ob, l, n));
        });
    Value sq = reduceRows(
        r, x, mean, 0.0,
        [&](OpBuilder &ob, Location l, ValueRange v, Value a) -> Value {
          Value d = arith::SubFOp::create(ob, l, v[0], v[1]);
          return add(ob, l, arith::MulFOp::create(ob, l, d, d), a);
        });
    // rstd = 1 / sqrt(sum((x - mean)^2) / n + eps): the biased variance.
    Value rstd = mapRows(
        r, sq, f32, [&](OpBuilder &ob, Location l, ValueRange v) -> Value {
          Value var = arith::DivFOp::create(ob, l, v[0], cst(ob, l, n));
          return math::RsqrtOp::create(ob, l, add(ob, l, var, cst(ob, l, eps)));
        });
    SmallVector<Value> features;
    bool hasWeight = static_cast<bool>(norm.getWeight());
    if (hasWeight)
      features.push_back(norm.getWeight());
    if (norm.getBias())
      features.push_back(norm.getBias());
    bool hasBias = static_cast<bool>(norm.getBias());
    return mapFull(r, x, {mean, rstd}, features, elt,
                   [&](OpBuilder &ob, Location l, ValueRange v) -> Value {
                     Value y = arith::MulFOp::create(
                         ob, l, arith::SubFOp::create(ob, l, v[0], v[1]), v[2]);
                     unsigned next = 3;
                     if (hasWeight)
                       y = arith::MulFOp::create(ob, l, y, v[next++]);
                     if (hasBias)
                       y = add(ob, l, y, v[next]);
                     return y;
                   });
  }
  return nullptr;
}

struct KoptLowerToLinalgPass
    : public kopt::impl::KoptLowerToLinalgBase<KoptLowerToLinalgPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (op->getDialect() && isa<KoptDialect>(op->getDialect()) &&
          !isa<KernelOp, YieldOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      OpBuilder b(op);
      Lowering lowering(b, op->getLoc());
      Value result = lowering.lower(op);
      if (!result) {
        op->emitOpError("has no lowering to linalg");
        return signalPassFailure();
      }
      op->getResult(0).replaceAllUsesWith(result);
      op->erase();
    }
  }
};

} // namespace
