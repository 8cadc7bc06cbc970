//===- Pack.cpp - kernels for kopt.pack (padded, transposed copies) -------===//
//
// The linalg form of kopt.pack (passes/LowerToLinalg.cpp) is a copy generic,
// whose input map is the identity or the transpose (d0, d1) -> (d1, d0),
// followed by a tensor.pad with zeros at the high end. The kernel copies the
// result in 64 x 64 tiles, one tile per block of 256 threads (64 x 4):
//   - transposed: the block reads the source tile row by row (a warp reads 32
//     consecutive elements of a source row), stores it into shared memory
//     ([64][65]: the extra column keeps a column's elements in different
//     banks), and writes the result tile row by row from the shared tile's
//     columns, so that reads and writes are both coalesced (the classic
//     shared-memory transpose, NVIDIA's "Efficient Matrix Transpose" post);
//   - not transposed: each thread copies its elements directly.
// Elements outside the source are zeros; loads use clamped indices and a
// select, so that no thread reads out of bounds.
//
//===----------------------------------------------------------------------===//

#include "Pack.h"
#include "Common.h"

#include "kopt/Transforms/KernelBuilders.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace kopt;
using namespace kopt::kb;

static constexpr int64_t kTile = 64;
static constexpr int64_t kThreads = 256;
static constexpr int64_t kRowsPerPass = kThreads / kTile;

namespace {
/// The pieces of a pack kernel's body.
struct PackBody {
  linalg::GenericOp copy; // may be null (a pad of a kernel argument)
  tensor::PadOp pad;      // may be null (a transpose without padding)
  bool transpose = false;
};
} // namespace

static bool isTransposeMap(AffineMap map) {
  return map.isPermutation() && map.getNumDims() == 2 &&
         map == AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0},
                                             map.getContext());
}

/// A copy generic: one input, all-parallel 2-D iterators, identity output map,
/// an identity or transposed input map, a payload that yields its input.
static bool isCopy(linalg::GenericOp g) {
  if (g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 ||
      g.getNumLoops() != 2 || g.getNumReductionLoops() != 0)
    return false;
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  if (!maps[1].isIdentity() ||
      !(maps[0].isIdentity() || isTransposeMap(maps[0])))
    return false;
  auto yield = cast<linalg::YieldOp>(g.getBody()->getTerminator());
  return yield.getNumOperands() == 1 &&
         yield.getOperand(0) == g.getBody()->getArgument(0);
}

bool kb::isPackKernel(KernelOp kernel) {
  SmallVector<linalg::GenericOp> gs = generics(kernel);
  bool hasPad = false;
  for (Operation &op : kernel.getBody().front())
    hasPad |= isa<tensor::PadOp>(op);
  if (hasPad)
    return gs.size() <= 1;
  return gs.size() == 1 && isCopy(gs.front()) &&
         isTransposeMap(gs.front().getIndexingMapsArray()[0]);
}

FailureOr<LaunchConfig> kopt::buildPackKernel(KernelOp kernel,
                                              gpu::GPUFuncOp func) {
  PackBody body;
  for (Operation &op : kernel.getBody().front()) {
    if (auto g = dyn_cast<linalg::GenericOp>(op))
      body.copy = g;
    else if (auto p = dyn_cast<tensor::PadOp>(op))
      body.pad = p;
  }
  Location loc = kernel.getLoc();
  if (body.copy && !isCopy(body.copy))
    return body.copy.emitOpError(
        "is not a 2-D copy (identity or transposed input map, payload "
        "yielding its input); a pack kernel holds one");
  if (body.copy)
    body.transpose = isTransposeMap(body.copy.getIndexingMapsArray()[0]);
  if (body.pad) {
    if (body.copy && body.pad.getSource() != body.copy.getResult(0))
      return body.pad.emitOpError("must pad the copy's result");
    if (llvm::any_of(body.pad.getStaticLow(), [](int64_t v) { return v; }) ||
        !body.pad.getLow().empty())
      return body.pad.emitOpError(
          "pack kernels pad at the high end only, by static amounts");
    Value padValue = body.pad.getConstantPaddingValue();
    if (!padValue || !matchPattern(padValue, m_AnyZeroFloat()))
      return body.pad.emitOpError("pack kernels pad with zeros only");
  }

  KernelIO io(kernel, func);
  Value srcTensor =
      body.copy ? body.copy.getDpsInputs()[0] : body.pad.getSource();
  Value dstTensor = body.pad ? body.pad.getResult() : body.copy.getResult(0);
  Value src = io.memrefOf(srcTensor), dst = io.memrefOf(dstTensor);
  if (!src || !dst)
    return kernel.emitOpError(
        "pack kernels copy a kernel argument into a kernel result");
  auto srcType = cast<MemRefType>(src.getType());
  auto dstType = cast<MemRefType>(dst.getType());
  if (srcType.getRank() != 2 || dstType.getRank() != 2)
    return kernel.emitOpError("pack kernels copy 2-D tensors");
  int64_t x0 = srcType.getDimSize(0), x1 = srcType.getDimSize(1);
  int64_t r0 = dstType.getDimSize(0), r1 = dstType.getDimSize(1);
  Type elt = dstType.getElementType();

  int64_t tilesR = llvm::divideCeil(r0, kTile);
  int64_t tilesC = llvm::divideCeil(r1, kTile);
  if (tilesR * tilesC > kMaxGridX)
    return kernel.emitOpError("needs ")
           << tilesR * tilesC << " tiles of " << kTile << "x" << kTile
           << ", more blocks than a grid holds";
  LaunchConfig cfg;
  cfg.grid = {tilesR * tilesC, 1, 1};
  cfg.block = {kThreads, 1, 1};

  OpBuilder b = OpBuilder::atBlockBegin(&func.front());
  auto c = [&](int64_t v) { return indexConst(b, loc, v); };
  Value smem;
  if (body.transpose) {
    auto smemType =
        MemRefType::get({kTile, kTile + 1}, elt, MemRefLayoutAttrInterface(),
                        gpu::AddressSpaceAttr::get(
                            b.getContext(), gpu::AddressSpace::Workgroup));
    smem = func.addWorkgroupAttribution(smemType, loc);
  }
  Value tid = threadIdX(b, loc), bid = blockIdX(b, loc);
  Value tx = arith::RemUIOp::create(b, loc, tid, c(kTile));
  Value ty = arith::DivUIOp::create(b, loc, tid, c(kTile));
  Value tileR = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, bid, c(tilesC)), c(kTile));
  Value tileC = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, bid, c(tilesC)), c(kTile));
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elt));
  // The bounds, made here so that they dominate every use below.
  Value rows = c(x0), cols = c(x1), lastRow = c(x0 - 1), lastCol = c(x1 - 1);
  Value dstRows = c(r0), dstCols = c(r1), tileEnd = c(kTile),
        step = c(kRowsPerPass);

  // src[row][col], or zero outside the source (clamped load, then select).
  auto loadOrZero = [&](OpBuilder &ob, Value row, Value col) -> Value {
    Value inRows =
        arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::ult, row, rows);
    Value inCols =
        arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::ult, col, cols);
    Value inside = arith::AndIOp::create(ob, loc, inRows, inCols);
    Value r = arith::MinUIOp::create(ob, loc, row, lastRow);
    Value cl = arith::MinUIOp::create(ob, loc, col, lastCol);
    Value v = memref::LoadOp::create(ob, loc, src, ValueRange{r, cl});
    return arith::SelectOp::create(ob, loc, inside, v, zero);
  };
  // Passes over the tile: rows ty, ty + 4, ..., ty + 60.
  auto forEachRow = [&](function_ref<void(OpBuilder &, Value)> fn) {
    auto loop = scf::ForOp::create(b, loc, ty, tileEnd, step);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    fn(b, loop.getInductionVar());
  };
  // dst[tileR + row][tileC + tx] = value(row), where inside the result.
  auto storeRow = [&](OpBuilder &ob, Value row,
                      function_ref<Value(OpBuilder &, Value, Value)> value) {
    Value i = arith::AddIOp::create(ob, loc, tileR, row);
    Value j = arith::AddIOp::create(ob, loc, tileC, tx);
    Value inside = arith::AndIOp::create(
        ob, loc,
        arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::ult, i, dstRows),
        arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::ult, j, dstCols));
    auto guard = scf::IfOp::create(ob, loc, inside, /*withElseRegion=*/false);
    OpBuilder tb = guard.getThenBodyBuilder();
    memref::StoreOp::create(tb, loc, value(tb, i, j), dst, ValueRange{i, j});
  };

  if (body.transpose) {
    // result[i][j] = src[j][i]: the block's source tile is rows tileC..,
    // columns tileR..; smem[a][b] = src[tileC + a][tileR + b].
    forEachRow([&](OpBuilder &ob, Value row) {
      Value v = loadOrZero(ob, arith::AddIOp::create(ob, loc, tileC, row),
                           arith::AddIOp::create(ob, loc, tileR, tx));
      memref::StoreOp::create(ob, loc, v, smem, ValueRange{row, tx});
    });
    gpu::BarrierOp::create(b, loc);
    forEachRow([&](OpBuilder &ob, Value row) {
      storeRow(ob, row, [&](OpBuilder &tb, Value, Value) -> Value {
        return memref::LoadOp::create(tb, loc, smem, ValueRange{tx, row});
      });
    });
  } else {
    forEachRow([&](OpBuilder &ob, Value row) {
      storeRow(ob, row, [&](OpBuilder &tb, Value i, Value j) {
        return loadOrZero(tb, i, j);
      });
    });
  }
  gpu::ReturnOp::create(b, loc);
  return cfg;
}
