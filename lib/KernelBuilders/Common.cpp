//===- Common.cpp - helpers shared by the kernel builders -----------------===//
//
// The bottom of lib/KernelBuilders (see CMakeLists.txt): index arithmetic,
// payload cloning, lane accesses, warp reductions and the recognizers of
// contractions, used by every builder; it depends on no other file here.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;

KernelIO::KernelIO(KernelOp kernel, gpu::GPUFuncOp func) {
  Block &body = kernel.getBody().front();
  unsigned n = body.getNumArguments();
  for (auto [i, arg] : llvm::enumerate(body.getArguments()))
    memrefs[arg] = func.getArgument(i);
  auto yield = cast<YieldOp>(body.getTerminator());
  for (auto [i, v] : llvm::enumerate(yield.getValues()))
    memrefs[v] = func.getArgument(n + i);
}

Value KernelIO::memrefOf(Value tensor) const { return memrefs.lookup(tensor); }

Value kb::indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

SmallVector<Value> kb::delinearize(OpBuilder &b, Location loc, Value linear,
                                   ArrayRef<int64_t> shape) {
  SmallVector<Value> idx(shape.size());
  Value rest = linear;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    if (i == 0) {
      idx[i] = rest;
      break;
    }
    Value size = indexConst(b, loc, shape[i]);
    idx[i] = arith::RemUIOp::create(b, loc, rest, size);
    rest = arith::DivUIOp::create(b, loc, rest, size);
  }
  return idx;
}

FailureOr<SmallVector<Value>> kb::applyIndexingMap(OpBuilder &b, Location loc,
                                                   AffineMap map,
                                                   ValueRange dims) {
  SmallVector<Value> out;
  for (AffineExpr e : map.getResults()) {
    if (auto d = dyn_cast<AffineDimExpr>(e))
      out.push_back(dims[d.getPosition()]);
    else if (auto c = dyn_cast<AffineConstantExpr>(e))
      out.push_back(indexConst(b, loc, c.getValue()));
    else
      return failure();
  }
  return out;
}

/// Whether `v` is defined outside the payload of `generic`.
static bool definedOutside(linalg::GenericOp generic, Value v) {
  return !generic.getRegion().isAncestor(v.getParentRegion());
}

/// Whether `v` is defined by a constant op.
static bool isConstant(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->hasTrait<OpTrait::ConstantLike>();
}

Value kb::clonePayload(OpBuilder &b, linalg::GenericOp generic,
                       ValueRange args) {
  Block *body = generic.getBody();
  IRMapping map;
  map.map(body->getArguments(), args);
  // Constants the payload captures from around the generic are cloned with
  // it (checkPayloads admitted no other captured value).
  auto captureConstants = [&](Operation &op) {
    for (Value v : op.getOperands())
      if (!map.contains(v) && definedOutside(generic, v) && isConstant(v))
        map.map(v, b.clone(*v.getDefiningOp())->getResult(0));
  };
  for (Operation &op : body->without_terminator()) {
    op.walk([&](Operation *nested) { captureConstants(*nested); });
    b.clone(op, map);
  }
  captureConstants(*body->getTerminator());
  return map.lookupOrDefault(body->getTerminator()->getOperand(0));
}

bool kb::isMultiplyAccumulate(linalg::GenericOp g) {
  Block *body = g.getBody();
  if (body->getNumArguments() != 3)
    return false;
  Value a = body->getArgument(0), b = body->getArgument(1),
        acc = body->getArgument(2);
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  if (yield.getNumOperands() != 1)
    return false;
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != body)
    return false;
  Value product = add.getLhs() == acc   ? add.getRhs()
                  : add.getRhs() == acc ? add.getLhs()
                                        : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul || mul->getBlock() != body || mul.getType() != acc.getType())
    return false;
  // An operand of the product: the input itself, or it extended (extf) to
  // the accumulator's type.
  unsigned extensions = 0;
  auto input = [&](Value v) -> Value {
    if (auto ext = v.getDefiningOp<arith::ExtFOp>()) {
      ++extensions;
      return ext->getBlock() == body ? ext.getIn() : Value();
    }
    return v;
  };
  Value x = input(mul.getLhs()), y = input(mul.getRhs());
  if (!((x == a && y == b) || (x == b && y == a)))
    return false;
  // Nothing else in the payload: the extensions, the product, the sum.
  return body->getOperations().size() == extensions + 3;
}

LogicalResult kb::checkPayloads(KernelOp kernel) {
  WalkResult result = kernel.getBody().walk([&](linalg::GenericOp generic) {
    WalkResult inner = generic.getRegion().walk([&](Operation *op) {
      for (Value v : op->getOperands()) {
        if (!definedOutside(generic, v) || isConstant(v))
          continue;
        op->emitOpError("uses a value defined outside its linalg.generic's "
                        "payload (only constants may be captured)");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return inner.wasInterrupted() ? WalkResult::interrupt()
                                  : WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

SmallVector<linalg::GenericOp> kb::generics(KernelOp kernel) {
  SmallVector<linalg::GenericOp> out;
  for (Operation &op : kernel.getBody().front())
    if (auto g = dyn_cast<linalg::GenericOp>(op))
      out.push_back(g);
  return out;
}

int64_t kb::vectorWidth(TypeRange types, int64_t n) {
  unsigned minBytes = 4;
  for (Type t : types)
    minBytes = std::min(minBytes, t.getIntOrFloatBitWidth() / 8);
  int64_t v = 16 / std::max(1u, minBytes);
  while (v > 1 && n % v != 0)
    v /= 2;
  return v;
}

LaneAccess kb::laneAccess(AffineMap map, unsigned lastDim) {
  ArrayRef<AffineExpr> results = map.getResults();
  auto usesLast = [&](AffineExpr e) { return e.isFunctionOfDim(lastDim); };
  if (llvm::none_of(results, usesLast))
    return LaneAccess::Uniform;
  auto last = dyn_cast<AffineDimExpr>(results.back());
  if (last && last.getPosition() == lastDim &&
      llvm::none_of(results.drop_back(), usesLast))
    return LaneAccess::Contiguous;
  return LaneAccess::Other;
}

Value Lanes::lane(OpBuilder &b, Location loc, int64_t l) const {
  if (!isVector)
    return value;
  return vector::ExtractOp::create(b, loc, value, l);
}

FailureOr<Lanes> kb::loadLanes(OpBuilder &b, Location loc, Value mem,
                               AffineMap map, ValueRange dims, int64_t v) {
  FailureOr<SmallVector<Value>> idx = applyIndexingMap(b, loc, map, dims);
  if (failed(idx))
    return failure();
  Lanes lanes;
  LaneAccess access = laneAccess(map, dims.size() - 1);
  if (v == 1 || access == LaneAccess::Uniform) {
    lanes.value = memref::LoadOp::create(b, loc, mem, *idx);
    return lanes;
  }
  if (access != LaneAccess::Contiguous)
    return failure();
  Type elt = cast<MemRefType>(mem.getType()).getElementType();
  auto type = VectorType::get({v}, elt);
  int64_t bytes = v * elt.getIntOrFloatBitWidth() / 8;
  lanes.value =
      vector::LoadOp::create(b, loc, type, mem, *idx, /*nontemporal=*/false,
                             llvm::MaybeAlign(std::min<int64_t>(bytes, 16)));
  lanes.isVector = true;
  return lanes;
}

void kb::storeLanes(OpBuilder &b, Location loc, ValueRange values, Value mem,
                    ValueRange indices) {
  if (values.size() == 1) {
    memref::StoreOp::create(b, loc, values.front(), mem, indices);
    return;
  }
  Type elt = values.front().getType();
  auto type = VectorType::get({static_cast<int64_t>(values.size())}, elt);
  int64_t bytes = values.size() * elt.getIntOrFloatBitWidth() / 8;
  Value vec = vector::FromElementsOp::create(b, loc, type, values);
  vector::StoreOp::create(b, loc, vec, mem, indices, /*nontemporal=*/false,
                          llvm::MaybeAlign(std::min<int64_t>(bytes, 16)));
}

Value kb::fillValue(OpBuilder &b, Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return nullptr;
  Value v = fill.getInputs()[0];
  if (Operation *def = v.getDefiningOp())
    if (def->hasTrait<OpTrait::ConstantLike>())
      return b.clone(*def)->getResult(0);
  return nullptr;
}

int64_t kb::numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Value kb::warpAllReduce(OpBuilder &b, Location loc, Value v,
                        function_ref<Value(Value, Value)> combine,
                        int32_t width) {
  constexpr int32_t kWarpSize = 32;
  assert(width >= 1 && width <= kWarpSize && llvm::isPowerOf2_32(width));
  for (int32_t offset = width / 2; offset >= 1; offset /= 2) {
    Value other = gpu::ShuffleOp::create(b, loc, v, offset, kWarpSize,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    v = combine(v, other);
  }
  return v;
}

Value kb::threadIdX(OpBuilder &b, Location loc) {
  return gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
}
Value kb::blockIdX(OpBuilder &b, Location loc) {
  return gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
}

/// A contraction generic: two inputs, iterators (parallel, parallel, reduction)
/// and an output indexed (d0, d1).
/// Each input is indexed by k and by one of m, n; the payload multiplies and
/// adds (linalg's contraction interface).
bool kb::isContraction(linalg::GenericOp g) {
  auto iters = g.getIteratorTypesArray();
  if (g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 ||
      iters.size() != 3 || iters[0] != utils::IteratorType::parallel ||
      iters[1] != utils::IteratorType::parallel ||
      iters[2] != utils::IteratorType::reduction)
    return false;
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  MLIRContext *ctx = g.getContext();
  auto dim = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  auto uses = [](AffineMap m, AffineExpr a, AffineExpr b) {
    return m.getNumResults() == 2 && llvm::is_contained(m.getResults(), a) &&
           llvm::is_contained(m.getResults(), b);
  };
  return uses(maps[0], dim(0), dim(2)) && uses(maps[1], dim(1), dim(2)) &&
         maps[2] == AffineMap::get(3, 0, {dim(0), dim(1)}, ctx) &&
         linalg::isaContractionOpInterface(
             cast<linalg::LinalgOp>(g.getOperation()));
}
